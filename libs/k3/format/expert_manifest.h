// ExpertManifest: k3-manifest.json, the record of how a container was made
// and what k3-verify checks (schema: docs/CONTAINER.md, format_version 1).
// The same class reads and writes the per-shard fragments in .k3-parts/.
// Writing is deterministic (fixed key order, no timestamps). Plain value type.
// Thread-safety: a value; const use is safe from any thread, a change needs its
// one owner.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {

struct ManifestSettings {
  int bits = 8;
  int mlaBits = 8;
  int headBits = 8;
  bool operator==(const ManifestSettings&) const = default;
};

struct ManifestSourceShard {
  std::string file;
  uint64_t size = 0;
  std::string headerSha256;
  bool operator==(const ManifestSourceShard&) const = default;
};

struct ManifestExpert {
  int layer = 0;
  int id = 0;
  uint64_t offset = 0;  // absolute, in the output shard
  uint64_t length = 0;
  std::string sha256;   // of the bytes as read from the source
  bool operator==(const ManifestExpert&) const = default;
};

struct ManifestShard {
  std::string file;
  uint64_t size = 0;
  std::string sha256;
  uint64_t dataOffset = 0;  // 8 + N
  uint64_t tensors = 0;
  ManifestSourceShard source;
  std::vector<ManifestExpert> experts;  // sorted by (layer, id)
  int root = 0;  // spread containers: index into ExpertManifest::roots (0 = DST itself)
  bool operator==(const ManifestShard&) const = default;
};

struct ManifestFile {
  std::string file;
  uint64_t size = 0;
  std::string sha256;
  bool operator==(const ManifestFile&) const = default;
};

struct ExpertManifest {
  static constexpr int kFormatVersion = 1;
  // A container spread over several directories (k3-repack --spread): the
  // manifest gains `roots` and a per-shard `root`; readers of version 1
  // would not find the shards outside DST, so it is a version of its own.
  static constexpr int kSpreadFormatVersion = 2;
  static constexpr const char* kFileName = "k3-manifest.json";
  static constexpr const char* kPartsDir = ".k3-parts";
  // "files" lists the snapshot files k3-repack copies (config, tokenizer,
  // generation config: a handful); more is a hostile manifest, refused while
  // parsing rather than stat'ed and hashed one by one.
  static constexpr size_t kMaxFiles = 1024;
  // k3-repack's lock on DST (holds the writer's PID; removed when it ends).
  static constexpr const char* kLockName = ".k3-repack.lock";

  int formatVersion = kFormatVersion;
  std::string tool = "k3-repack";
  std::string toolVersion;
  ManifestSettings settings;
  std::string configSha256;
  std::string prefix;
  int numLayers = 0;
  int numExperts = 0;
  uint64_t expertBytes = 0;
  // Spread containers only (format_version 2): where each root directory is,
  // relative to DST; roots[0] is "." (DST). Empty for a one-directory container.
  std::vector<std::string> roots;
  std::vector<ManifestShard> shards;  // sorted by file
  std::vector<ManifestFile> files;    // sorted by file

  // Same run identity (everything except shards/files).
  bool sameRun(const ExpertManifest& o) const;
  const ManifestShard* findShard(std::string_view file) const;
  bool spread() const { return !roots.empty(); }
  // Where the shard is relative to DST, as the index records it: its file
  // name in DST, "<root>/<file>" in another root (docs/CONTAINER.md).
  std::string location(const ManifestShard& s) const;
  // The expert's entry and its shard, or nullptr.
  const ManifestExpert* findExpert(int layer, int id, const ManifestShard** shard = nullptr) const;

  std::string toJson() const;
  // Throws Format naming `path` (and the shard/expert) on any schema error,
  // Unsupported for another format_version.
  static ExpertManifest parse(std::string_view json, const std::string& path);
  static ExpertManifest load(const std::string& path);
  void save(const std::string& path) const;  // atomic
};

}  // namespace k3
