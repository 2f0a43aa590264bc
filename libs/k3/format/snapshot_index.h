// SnapshotIndex: model.safetensors.index.json (HF convention): `weight_map`
// (tensor name -> shard basename, in file order) and `metadata.total_size`.
// Reading accepts any valid index; writing follows spec §5.7 byte for byte
// (Python json.dump default separators, ASCII escaping, no trailing newline).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace k3 {

struct SnapshotIndex {
  std::optional<uint64_t> totalSize;
  std::vector<std::pair<std::string, std::string>> weightMap;  // in file order

  // Shard basenames in first-appearance order.
  std::vector<std::string> shardFiles() const;
  // name -> shard; throws Duplicate if a name appears twice.
  std::unordered_map<std::string, std::string> lookup(const std::string& path) const;

  // Throws Format naming `path` (not an object, weight_map missing or not a
  // string map, total_size not an integer, duplicate names -> Duplicate).
  static SnapshotIndex parse(std::string_view json, const std::string& path);
  static SnapshotIndex load(const std::string& path);

  std::string toJson() const;  // spec §5.7 text
  void save(const std::string& path) const;  // atomic
};

}  // namespace k3
