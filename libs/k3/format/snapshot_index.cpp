#include "k3/format/snapshot_index.h"

#include <simdjson.h>

#include <unordered_set>
#include <utility>

#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/io/output_file.h"

namespace k3 {

std::vector<std::string> SnapshotIndex::shardFiles() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  for (const auto& [name, shard] : weightMap)
    if (seen.insert(shard).second) out.push_back(shard);
  return out;
}

std::unordered_map<std::string, std::string> SnapshotIndex::lookup(const std::string& path) const {
  std::unordered_map<std::string, std::string> m;
  for (const auto& [name, shard] : weightMap)
    if (!m.emplace(name, shard).second)
      fail(ErrorKind::Duplicate, path, ": tensor '", name, "' appears twice in weight_map");
  return m;
}

std::pair<uint64_t, uint64_t> nameFingerprint(std::string_view name) {
  uint64_t fnv = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) fnv = (fnv ^ c) * 0x100000001b3ull;
  return {std::hash<std::string_view>{}(name), fnv};  // libstdc++: murmur2
}

namespace {

bool isBasename(std::string_view shard) {
  return !shard.empty() && shard.find('/') == std::string_view::npos && shard != "." && shard != "..";
}

bool isShardName(std::string_view shard, SnapshotIndex::ShardNames names) {
  if (isBasename(shard)) return true;
  if (names != SnapshotIndex::ShardNames::SpreadLocations) return false;
  const size_t slash = shard.rfind('/');
  return slash != std::string_view::npos && isBasename(shard.substr(slash + 1)) &&
         isSpreadRootPath(shard.substr(0, slash));
}

// On-demand parsing: memory is the text itself, not a DOM of ~500k entries.
void scanPadded(const simdjson::padded_string& text, const std::string& path,
                const SnapshotIndex::EntryFn& entry, std::optional<uint64_t>* totalSize,
                SnapshotIndex::ShardNames names) {
  namespace od = simdjson::ondemand;
  auto bad = [&](simdjson::error_code err) {
    fail(ErrorKind::Format, path, ": not valid JSON (", simdjson::error_message(err), ")");
  };
  od::parser parser;
  od::document doc;
  if (auto err = parser.iterate(text).get(doc)) bad(err);
  od::object root;
  if (doc.get_object().get(root)) fail(ErrorKind::Format, path, ": index is not a JSON object");
  bool haveMap = false;
  for (auto fieldResult : root) {
    od::field field;
    if (auto err = std::move(fieldResult).get(field)) bad(err);
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) bad(err);
    if (key == "weight_map") {
      od::object wm;
      if (field.value().get_object().get(wm))
        fail(ErrorKind::Format, path, ": missing or non-object \"weight_map\"");
      haveMap = true;
      for (auto entryResult : wm) {
        od::field e;
        if (auto err = std::move(entryResult).get(e)) bad(err);
        std::string_view name, shard;
        if (auto err = e.unescaped_key().get(name)) bad(err);
        // Keys are unescaped into the parser's buffer, so `name` outlives the value read.
        if (e.value().get_string().get(shard))
          fail(ErrorKind::Format, path, ": weight_map entry '", name, "' is not a string");
        if (!isShardName(shard, names))
          fail(ErrorKind::Format, path, ": weight_map entry '", name, "' names an invalid shard '",
               shard, "'");
        entry(name, shard);
      }
    } else if (key == "metadata") {
      od::object meta;
      if (field.value().get_object().get(meta)) continue;  // not an object: ignored, as before
      for (auto metaResult : meta) {
        od::field m;
        if (auto err = std::move(metaResult).get(m)) bad(err);
        std::string_view mkey;
        if (auto err = m.unescaped_key().get(mkey)) bad(err);
        if (mkey != "total_size") continue;
        uint64_t v = 0;
        if (m.value().get_uint64().get(v))
          fail(ErrorKind::Format, path, ": metadata.total_size is not a non-negative integer");
        if (totalSize) *totalSize = v;
      }
    }
  }
  // After the root object only the end may follow (current_location is out of bounds).
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS)
    fail(ErrorKind::Format, path, ": not valid JSON (content after the root object)");
  if (!haveMap) fail(ErrorKind::Format, path, ": missing or non-object \"weight_map\"");
}

}  // namespace

void SnapshotIndex::scan(std::string_view json, const std::string& path, const EntryFn& entry,
                         std::optional<uint64_t>* totalSize, ShardNames names) {
  scanPadded(simdjson::padded_string(json), path, entry, totalSize, names);
}

void SnapshotIndex::scanFile(const std::string& path, const EntryFn& entry,
                             std::optional<uint64_t>* totalSize, ShardNames names) {
  const InputFile f = openInputFile(path, kIndexInput, true);
  simdjson::padded_string text(static_cast<size_t>(f.size));  // read in place: no second copy
  readInputInto(f, text.data());
  scanPadded(text, path, entry, totalSize, names);
}

SnapshotIndex SnapshotIndex::parse(std::string_view json, const std::string& path, ShardNames names) {
  SnapshotIndex idx;
  scan(json, path, [&](std::string_view name, std::string_view shard) {
    idx.weightMap.emplace_back(std::string(name), std::string(shard));
  }, &idx.totalSize, names);
  std::unordered_set<std::string_view> seen;
  seen.reserve(idx.weightMap.size());
  for (const auto& [name, shard] : idx.weightMap)
    if (!seen.insert(name).second)
      fail(ErrorKind::Duplicate, path, ": tensor '", name, "' appears twice in weight_map");
  return idx;
}

SnapshotIndex SnapshotIndex::load(const std::string& path, ShardNames names) {
  return parse(readInputFile(path, kIndexInput), path, names);
}

void SnapshotIndex::Text::begin(uint64_t totalSize) {
  out = "{\"metadata\": {\"total_size\": ";
  out += std::to_string(totalSize);
  out += "}, \"weight_map\": {";
  entries = 0;
}

void SnapshotIndex::Text::add(std::string_view name, std::string_view shard) {
  if (entries++) out += ", ";
  appendJsonString(out, name);
  out += ": ";
  appendJsonString(out, shard);
}

std::string& SnapshotIndex::Text::end() {
  out += "}}";
  return out;
}

std::string SnapshotIndex::toJson() const {
  Text text;
  text.begin(totalSize.value_or(0));
  for (const auto& [name, shard] : weightMap) text.add(name, shard);
  return std::move(text.end());
}

void SnapshotIndex::save(const std::string& path) const { writeFileAtomic(path, toJson()); }

}  // namespace k3
