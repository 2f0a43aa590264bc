#include "k3/format/snapshot_index.h"

#include <simdjson.h>

#include <unordered_set>

#include "k3/format/durable_file.h"
#include "k3/format/json_text.h"
#include "k3/io/error.h"

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

SnapshotIndex SnapshotIndex::parse(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::padded_string padded(json);
  if (auto err = parser.parse(padded).get(root))
    fail(ErrorKind::Format, path, ": not valid JSON (", simdjson::error_message(err), ")");
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) fail(ErrorKind::Format, path, ": index is not a JSON object");
  SnapshotIndex idx;
  simdjson::dom::object wm;
  if (obj["weight_map"].get_object().get(wm))
    fail(ErrorKind::Format, path, ": missing or non-object \"weight_map\"");
  std::unordered_set<std::string_view> seen;
  for (auto field : wm) {
    std::string_view shard;
    if (field.value.get_string().get(shard))
      fail(ErrorKind::Format, path, ": weight_map entry '", field.key, "' is not a string");
    if (!seen.insert(field.key).second)
      fail(ErrorKind::Duplicate, path, ": tensor '", field.key, "' appears twice in weight_map");
    if (shard.empty() || shard.find('/') != std::string_view::npos || shard == "." || shard == "..")
      fail(ErrorKind::Format, path, ": weight_map entry '", field.key, "' names an invalid shard '",
           shard, "'");
    idx.weightMap.emplace_back(std::string(field.key), std::string(shard));
  }
  simdjson::dom::object meta;
  if (!obj["metadata"].get_object().get(meta)) {
    simdjson::dom::element ts;
    if (!meta["total_size"].get(ts)) {
      uint64_t v = 0;
      if (ts.get_uint64().get(v))
        fail(ErrorKind::Format, path, ": metadata.total_size is not a non-negative integer");
      idx.totalSize = v;
    }
  }
  return idx;
}

SnapshotIndex SnapshotIndex::load(const std::string& path) { return parse(readWholeFile(path), path); }

std::string SnapshotIndex::toJson() const {
  std::string out = "{\"metadata\": {\"total_size\": ";
  out += std::to_string(totalSize.value_or(0));
  out += "}, \"weight_map\": {";
  bool first = true;
  for (const auto& [name, shard] : weightMap) {
    if (!first) out += ", ";
    first = false;
    appendJsonString(out, name);
    out += ": ";
    appendJsonString(out, shard);
  }
  out += "}}";
  return out;
}

void SnapshotIndex::save(const std::string& path) const { writeFileAtomic(path, toJson()); }

}  // namespace k3
