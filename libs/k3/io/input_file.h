// InputFile: the one way the library opens a file it reads. Regular files
// only (a FIFO would block forever, /dev/zero never ends, a directory is not
// a file), opened non-blocking so even a FIFO returns at once to be refused,
// and a size cap per kind of file so a careless or hostile path fails with a
// one-line error instead of growing memory until the OOM killer.
// Names taken from manifests and indexes are confined to their directory.
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "k3/io/file_io.h"

namespace k3 {

// What a file is for (named in errors) and the most bytes it may have.
struct InputCap {
  const char* what;
  uint64_t maxBytes;
};

// Each cap is far above the real K3 file of that kind and far below memory.
inline constexpr InputCap kConfigInput{"config", uint64_t{16} << 20};               // K3 config.json: ~10 KB
inline constexpr InputCap kIndexInput{"index", uint64_t{1} << 30};                  // K3 index: ~50 MB (497k names)
inline constexpr InputCap kManifestInput{"manifest", uint64_t{1} << 30};            // K3 manifest: ~25 MB (83k experts)
inline constexpr InputCap kTokenizerModelInput{"tokenizer model", uint64_t{64} << 20};  // tiktoken.model: ~2.8 MB
inline constexpr InputCap kTokenizerConfigInput{"tokenizer config", uint64_t{64} << 20};  // tokenizer_config.json: ~0.2 MB, tokenizer.json ~10 MB
inline constexpr InputCap kIdListInput{"id list", uint64_t{256} << 20};            // 10M ids is ~80 MB of text
inline constexpr InputCap kTextInput{"text", uint64_t{256} << 20};                 // --perplexity / bench text
inline constexpr InputCap kChatLineInput{"chat line", uint64_t{1} << 20};          // one interactive stdin line
inline constexpr InputCap kSecretInput{"API key file", uint64_t{64} << 10};         // a bearer token: ~100 bytes
inline constexpr InputCap kChatRequestInput{"chat request", uint64_t{64} << 20};    // k3-tokgen chat -f / --tools
inline constexpr InputCap kCorpusInput{"corpus", uint64_t{1} << 30};               // k3-tokgen --check: test corpora, ~1 MB
// Shards are read by the ranges their header declares, never whole: no cap.
inline constexpr InputCap kShardInput{"shard", UINT64_MAX};
// A file only hashed in blocks (k3-verify's copied files): no cap either.
inline constexpr InputCap kHashedInput{"file", UINT64_MAX};

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

struct InputFile {
  UniqueFd fd;
  std::string path;
  uint64_t size = 0;
  FileId id;
};

// Opens `path` O_RDONLY|O_NONBLOCK|O_CLOEXEC, then fstat: refuses anything but
// a regular file (Format, "<path>: <what> is a FIFO, not a regular file") and
// a file larger than the cap (Format). Open errors: Io (Missing with
// `missingIsMissing` when the file does not exist).
InputFile openInputFile(const std::string& path, const InputCap& cap, bool missingIsMissing = false);

// Reads exactly f.size bytes into `buf` (the size fstat gave); Format if the
// file shrank or grew meanwhile.
void readInputInto(const InputFile& f, char* buf);

// openInputFile + readInputInto: the whole file (Missing if it does not exist).
std::string readInputFile(const std::string& path, const InputCap& cap);

// Reads `fd` (a pipe, stdin, ...) to its end, failing Format naming `origin`
// once more than cap.maxBytes arrive: never grows past the cap.
std::string readStreamCapped(int fd, const std::string& origin, const InputCap& cap);

// A file name taken from a manifest or an index, relative to its directory:
// non-empty, no leading '/', no '..' (or '.') component, no empty component,
// no NUL. Container files are flat, but a relative subpath is allowed.
bool isConfinedName(std::string_view name);

// Opens dir/name as openInputFile does, after refusing (Format) a name that is
// not confined or that resolves, through symlinks, outside `dir`.
InputFile openContainedFile(const std::string& dir, std::string_view name, const InputCap& cap);

}  // namespace k3
