// SnapshotIndex: model.safetensors.index.json (HF convention): `weight_map`
// (tensor name -> shard basename, in file order) and `metadata.total_size`.
// Reading accepts any valid index; writing follows spec §5.7 byte for byte
// (Python json.dump default separators, ASCII escaping, no trailing newline).
// Thread-safety: values and pure functions; an index is safe to share
// read-only, a Text builder is one writer's.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace k3 {

// A 128-bit fingerprint of a tensor name (two unrelated 64-bit hashes; a
// chance collision among K3's ~500k names is ~1e-27): lets checks over every
// name keep 16 bytes per name instead of the name.
std::pair<uint64_t, uint64_t> nameFingerprint(std::string_view name);

struct SnapshotIndex {
  // What a weight_map value may be: a shard basename (a snapshot, a plain
  // container), or also "<root>/<basename>" with a relative root (a container
  // spread over several directories, spread_layout.h).
  enum class ShardNames { Basenames, SpreadLocations };

  std::optional<uint64_t> totalSize;
  std::vector<std::pair<std::string, std::string>> weightMap;  // in file order

  // Shard basenames in first-appearance order.
  std::vector<std::string> shardFiles() const;
  // name -> shard; throws Duplicate if a name appears twice.
  std::unordered_map<std::string, std::string> lookup(const std::string& path) const;

  // Throws Format naming `path` (not an object, weight_map missing or not a
  // string map, total_size not an integer, duplicate names -> Duplicate).
  static SnapshotIndex parse(std::string_view json, const std::string& path,
                             ShardNames names = ShardNames::Basenames);
  static SnapshotIndex load(const std::string& path, ShardNames names = ShardNames::Basenames);

  // Streams the weight_map entries in file order without building the map
  // (K3's index has ~500k names): the same checks as parse() except
  // duplicate names, which the caller detects. Views are valid during the call.
  using EntryFn = std::function<void(std::string_view name, std::string_view shard)>;
  static void scan(std::string_view json, const std::string& path, const EntryFn& entry,
                   std::optional<uint64_t>* totalSize = nullptr, ShardNames names = ShardNames::Basenames);
  static void scanFile(const std::string& path, const EntryFn& entry,
                       std::optional<uint64_t>* totalSize = nullptr, ShardNames names = ShardNames::Basenames);

  std::string toJson() const;  // spec §5.7 text

  // The spec §5.7 text built entry by entry, for writers that do not hold
  // the whole map: begin(), add() per entry in order, end().
  struct Text {
    std::string out;
    size_t entries = 0;
    void begin(uint64_t totalSize);
    void add(std::string_view name, std::string_view shard);
    std::string& end();
  };
  void save(const std::string& path) const;  // atomic
};

}  // namespace k3
