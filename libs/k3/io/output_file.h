// AtomicOutput: the one way the library publishes a file. The target must
// not be a file the run reads (same device + inode as any input: truncating
// a mapped shard is SIGBUS and a lost input) and, when it exists, must be a
// regular file (a device node must not become one). Bytes go to
// `<path>.tmp-<pid>`, which is fsynced and renamed over the target; the temp
// is removed on every error path, so a full disk leaves nothing behind.
// Thread-safety: an AtomicOutput is one writer's (not thread-safe), and one per
// target at a time in a process (the temp name carries the PID); the free
// functions are stateless.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "k3/io/input_file.h"

namespace k3 {

void fsyncDirectory(const std::string& dir);
// The directory part of `path` ("." when none).
std::string parentDirectory(const std::string& path);

// Throws Usage naming `path` when it is one of `inputs` or exists and is not
// a regular file (after symlinks).
void checkOutputTarget(const std::string& path, std::span<const FileId> inputs);

// The identity of an existing file (after symlinks); nullopt-like {0,0} if absent.
FileId fileIdOf(const std::string& path);

// The identities of the regular files directly in `dir` (what a run over a
// container reads), for the check above; empty if `dir` cannot be listed.
std::vector<FileId> regularFileIdsIn(const std::string& dir);

class AtomicOutput {
 public:
  AtomicOutput(std::string path, std::span<const FileId> inputs = {});
  ~AtomicOutput();  // not committed: the temp is removed
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  void write(const void* data, size_t n);  // Io / NoSpace naming the temp
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // fsync, close, rename over the target, fsync its directory.
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void bail(int err, const char* what);
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// A whole small file (index, manifest fragments, copied configs, tokenizer
// output) through AtomicOutput: never a partial file under `path`, nor the temp.
void writeFileAtomic(const std::string& path, std::string_view bytes, std::span<const FileId> inputs = {});

}  // namespace k3
