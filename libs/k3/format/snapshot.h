// Snapshot: an HF K3 snapshot directory opened and cross-checked: config.json
// (ModelConfig), model.safetensors.index.json, every shard header (validated,
// not mapped), the optional `language_model.` prefix (spec §2.1), text vs
// vision shards, and the config ↔ tensors agreement (every implied tensor
// present with the right size, every routed expert's six MXFP4 parts present
// as U8 with the exact shapes). Errors are one line naming file and tensor.
// Immutable after open(); thread-safe for reads.
//
// Memory: K3 has ~500k tensors, so nothing per tensor is kept. The index is
// scanned on demand into 24-byte name fingerprints, each shard header is
// parsed, checked and dropped in turn, and openHeader() parses it again when
// a shard is converted.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/format/safetensors_file.h"
#include "k3/format/snapshot_index.h"

namespace k3 {

struct SourceShard {
  std::string file;          // basename, e.g. model-00002-of-000096.safetensors
  std::string path;
  int number = 0;            // NNNNN of the name (1-based)
  uint64_t size = 0;
  std::string headerSha256;  // SHA-256 of the first 8+N bytes
  bool hasText = false;      // holds at least one tensor that is not vision
  uint64_t tensors = 0;

  // The validated header (not kept between calls; see the class comment).
  SafetensorsFile openHeader() const;
};

struct SnapshotOptions {
  // A text tensor config.json does not imply is refused (the container would
  // not verify); with this it is left out of the conversion instead.
  bool dropUnknown = false;
};

class Snapshot {
 public:
  static constexpr const char* kIndexName = "model.safetensors.index.json";

  // Throws Missing / Format / Duplicate / Config naming the offending file.
  static Snapshot open(const std::string& dir, const SnapshotOptions& opts = {});

  // A tensor left out under SnapshotOptions::dropUnknown.
  bool isDropped(std::string_view name) const;
  size_t droppedTensors() const { return dropped_.size(); }

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::string& configText() const { return configText_; }
  const std::string& configSha256() const { return configSha256_; }
  const std::string& prefix() const { return prefix_; }  // "" or "language_model."
  size_t indexedTensors() const { return indexedTensors_; }  // weight_map entries
  const std::vector<SourceShard>& shards() const { return shards_; }  // by number
  // Shards that produce an output shard (hold text tensors).
  std::vector<const SourceShard*> textShards() const;
  const SourceShard* shardByNumber(int number) const;

  // Output naming, spec §5.6 generalised: model-NNNNN-of-TTTTTT.safetensors
  // with TTTTTT = num_hidden_layers + 1.
  int outputShardTotal() const { return config_.numLayers + 1; }
  std::string outputShardName(int number) const;
  static std::string shardName(int number, int total);

  // Re-reads a shard's size and header hash (the resume source-change check).
  static void identify(const std::string& path, uint64_t& size, std::string& headerSha256);

  struct IndexedName;  // a weight_map entry as open() keeps it (snapshot.cpp)

 private:
  // Every shard header against the index and the config, one shard at a time.
  void crossCheck(std::vector<IndexedName>& index, const std::vector<std::string>& indexShards);

  std::string dir_;
  ModelConfig config_;
  std::string configText_, configSha256_;
  std::string prefix_;
  size_t indexedTensors_ = 0;
  std::vector<SourceShard> shards_;
  SnapshotOptions opts_;
  std::vector<std::pair<uint64_t, uint64_t>> dropped_;  // name fingerprints, sorted
};

}  // namespace k3
