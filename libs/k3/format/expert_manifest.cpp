#include "k3/format/expert_manifest.h"

#include <simdjson.h>

#include "k3/format/model_config.h"
#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/io/output_file.h"

namespace k3 {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

struct Reader {
  const std::string& path;
  std::string where;  // context for messages, e.g. "shards[3]"

  [[noreturn]] void bad(std::string_view key, std::string_view what) const {
    fail(ErrorKind::Format, path, ": ", where.empty() ? "" : where + ".", key, ": ", what);
  }
  element get(object o, std::string_view key) const {
    element e;
    if (o[key].get(e)) bad(key, "missing");
    return e;
  }
  uint64_t u64(object o, std::string_view key) const {
    uint64_t v = 0;
    if (get(o, key).get_uint64().get(v)) bad(key, "not a non-negative integer");
    return v;
  }
  int i32(object o, std::string_view key) const {
    uint64_t v = u64(o, key);
    if (v > 0x7fffffff) bad(key, "out of range");
    return static_cast<int>(v);
  }
  std::string str(object o, std::string_view key) const {
    std::string_view v;
    if (get(o, key).get_string().get(v)) bad(key, "not a string");
    return std::string(v);
  }
  // An integer in [lo, hi]: absurd counts (num_experts 10^6) are refused here,
  // before a checker loops over them.
  int ranged(object o, std::string_view key, int lo, int hi) const {
    const int v = i32(o, key);
    if (v < lo || v > hi) bad(key, cat(v, " is outside [", lo, ", ", hi, "]"));
    return v;
  }
  // A container file name: a plain basename (the container is flat), so a
  // manifest can never point outside it ("../x", "/dev/zero", "a/b").
  std::string fileName(object o, std::string_view key) const {
    std::string v = str(o, key);
    if (!isConfinedName(v) || v.find('/') != std::string::npos)
      bad(key, cat("'", v, "' is not a file name inside the container"));
    return v;
  }
  std::string hash(object o, std::string_view key) const {
    std::string v = str(o, key);
    bool ok = v.size() == 64;
    for (char c : v) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    if (!ok) bad(key, "not a lower-case hex SHA-256");
    return v;
  }
  object obj(object o, std::string_view key) const {
    object v;
    if (get(o, key).get_object().get(v)) bad(key, "not an object");
    return v;
  }
  simdjson::dom::array arr(object o, std::string_view key) const {
    simdjson::dom::array v;
    if (get(o, key).get_array().get(v)) bad(key, "not an array");
    return v;
  }
};

void appendKV(std::string& out, const char* key, uint64_t v) { out += cat("\"", key, "\": ", v); }
void appendKV(std::string& out, const char* key, const std::string& v) {
  out += cat("\"", key, "\": ");
  appendJsonString(out, v);
}

}  // namespace

bool ExpertManifest::sameRun(const ExpertManifest& o) const {
  return formatVersion == o.formatVersion && tool == o.tool && toolVersion == o.toolVersion &&
         settings == o.settings && configSha256 == o.configSha256 && prefix == o.prefix &&
         numLayers == o.numLayers && numExperts == o.numExperts && expertBytes == o.expertBytes &&
         roots == o.roots;
}

std::string ExpertManifest::location(const ManifestShard& s) const {
  return spread() ? spreadLocation(roots[static_cast<size_t>(s.root)], s.file) : s.file;
}

const ManifestShard* ExpertManifest::findShard(std::string_view file) const {
  for (const ManifestShard& s : shards)
    if (s.file == file) return &s;
  return nullptr;
}

const ManifestExpert* ExpertManifest::findExpert(int layer, int id, const ManifestShard** shard) const {
  for (const ManifestShard& s : shards)
    for (const ManifestExpert& e : s.experts)
      if (e.layer == layer && e.id == id) {
        if (shard) *shard = &s;
        return &e;
      }
  return nullptr;
}

std::string ExpertManifest::toJson() const {
  std::string o = "{\n";
  o += cat("  \"format\": \"k3-container\",\n  \"format_version\": ", formatVersion, ",\n  ");
  appendKV(o, "tool", tool);
  o += ",\n  ";
  appendKV(o, "tool_version", toolVersion);
  o += cat(",\n  \"settings\": {\"bits\": ", settings.bits, ", \"mla_bits\": ", settings.mlaBits,
           ", \"head_bits\": ", settings.headBits, "},\n  \"source\": {");
  appendKV(o, "config_sha256", configSha256);
  o += ", ";
  appendKV(o, "prefix", prefix);
  o += cat(", \"num_hidden_layers\": ", numLayers, ", \"num_experts\": ", numExperts,
           ", \"expert_bytes\": ", expertBytes, "},\n  ");
  if (spread()) {
    o += "\"roots\": [";
    for (size_t i = 0; i < roots.size(); ++i) {
      if (i) o += ", ";
      appendJsonString(o, roots[i]);
    }
    o += "],\n  ";
  }
  o += "\"shards\": [";
  for (size_t i = 0; i < shards.size(); ++i) {
    const ManifestShard& s = shards[i];
    o += i ? ",\n    {" : "\n    {";
    appendKV(o, "file", s.file);
    o += ", ";
    if (spread()) {
      appendKV(o, "root", static_cast<uint64_t>(s.root));
      o += ", ";
    }
    appendKV(o, "size", s.size);
    o += ", ";
    appendKV(o, "sha256", s.sha256);
    o += ", ";
    appendKV(o, "data_offset", s.dataOffset);
    o += ", ";
    appendKV(o, "tensors", s.tensors);
    o += ",\n     \"source\": {";
    appendKV(o, "file", s.source.file);
    o += ", ";
    appendKV(o, "size", s.source.size);
    o += ", ";
    appendKV(o, "header_sha256", s.source.headerSha256);
    o += "},\n     \"experts\": [";
    for (size_t k = 0; k < s.experts.size(); ++k) {
      const ManifestExpert& e = s.experts[k];
      o += k ? ",\n      " : "\n      ";
      o += cat("{\"layer\": ", e.layer, ", \"id\": ", e.id, ", \"offset\": ", e.offset,
               ", \"length\": ", e.length, ", \"sha256\": \"", e.sha256, "\"}");
    }
    o += s.experts.empty() ? "]}" : "\n     ]}";
  }
  o += shards.empty() ? "],\n  \"files\": [" : "\n  ],\n  \"files\": [";
  for (size_t i = 0; i < files.size(); ++i) {
    o += i ? ",\n    {" : "\n    {";
    appendKV(o, "file", files[i].file);
    o += ", ";
    appendKV(o, "size", files[i].size);
    o += ", ";
    appendKV(o, "sha256", files[i].sha256);
    o += "}";
  }
  o += files.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

ExpertManifest ExpertManifest::parse(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root))
    fail(ErrorKind::Format, path, ": not valid JSON (", simdjson::error_message(err), ")");
  object top;
  if (root.get_object().get(top)) fail(ErrorKind::Format, path, ": manifest is not a JSON object");
  Reader r{path, ""};
  ExpertManifest m;
  if (r.str(top, "format") != "k3-container")
    fail(ErrorKind::Format, path, ": \"format\" is not \"k3-container\"");
  m.formatVersion = r.i32(top, "format_version");
  if (m.formatVersion != kFormatVersion && m.formatVersion != kSpreadFormatVersion)
    fail(ErrorKind::Unsupported, path, ": format_version ", m.formatVersion, " (this build reads ",
         kFormatVersion, " and ", kSpreadFormatVersion, ")");
  m.tool = r.str(top, "tool");
  m.toolVersion = r.str(top, "tool_version");
  object set = r.obj(top, "settings");
  m.settings = {r.ranged(set, "bits", 1, 16), r.ranged(set, "mla_bits", 1, 16), r.ranged(set, "head_bits", 1, 16)};
  object src = r.obj(top, "source");
  m.configSha256 = r.hash(src, "config_sha256");
  m.prefix = r.str(src, "prefix");
  // The bounds config.json is held to (ModelConfig).
  m.numLayers = r.ranged(src, "num_hidden_layers", 1, kMaxLayers);
  m.numExperts = r.ranged(src, "num_experts", 1, kMaxExperts);
  m.expertBytes = r.u64(src, "expert_bytes");
  if (m.formatVersion == kSpreadFormatVersion) {
    size_t ri = 0;
    for (element re : r.arr(top, "roots")) {
      std::string_view v;
      const std::string key = cat("roots[", ri, "]");
      if (re.get_string().get(v)) r.bad(key, "not a string");
      // Relative, so a moved set of directories still opens; "." first (DST).
      if (ri == 0 ? v != "." : !isSpreadRootPath(v))
        r.bad(key, cat("'", v, "' is not ", ri == 0 ? "\".\" (DST)" : "a relative directory path"));
      m.roots.emplace_back(v);
      if (++ri > kMaxSpreadRoots) r.bad("roots", cat("more than ", kMaxSpreadRoots, " roots"));
    }
    if (m.roots.size() < 2) r.bad("roots", "a spread container needs at least two roots");
  }
  size_t si = 0;
  for (element se : r.arr(top, "shards")) {
    Reader sr{path, cat("shards[", si++, "]")};
    object so;
    if (se.get_object().get(so)) sr.bad("", "not an object");
    ManifestShard s;
    s.file = sr.fileName(so, "file");
    if (m.spread()) s.root = sr.ranged(so, "root", 0, static_cast<int>(m.roots.size()) - 1);
    s.size = sr.u64(so, "size");
    s.sha256 = sr.hash(so, "sha256");
    s.dataOffset = sr.u64(so, "data_offset");
    s.tensors = sr.u64(so, "tensors");
    object ss = sr.obj(so, "source");
    s.source = {sr.fileName(ss, "file"), sr.u64(ss, "size"), sr.hash(ss, "header_sha256")};
    size_t ei = 0;
    for (element ee : sr.arr(so, "experts")) {
      Reader er{path, cat(sr.where, ".experts[", ei++, "]")};
      object eo;
      if (ee.get_object().get(eo)) er.bad("", "not an object");
      ManifestExpert e{er.i32(eo, "layer"), er.i32(eo, "id"), er.u64(eo, "offset"),
                       er.u64(eo, "length"), er.hash(eo, "sha256")};
      if (e.offset < s.dataOffset || e.length > s.size || e.offset > s.size - e.length)
        er.bad("offset", cat("byte range [", e.offset, ", +", e.length, ") is outside the shard data"));
      s.experts.push_back(std::move(e));
    }
    m.shards.push_back(std::move(s));
  }
  size_t fi = 0;
  for (element fe : r.arr(top, "files")) {
    if (fi == kMaxFiles) r.bad("files", cat("more than ", kMaxFiles, " entries (k3-repack copies a few snapshot files)"));
    Reader fr{path, cat("files[", fi++, "]")};
    object fo;
    if (fe.get_object().get(fo)) fr.bad("", "not an object");
    m.files.push_back({fr.fileName(fo, "file"), fr.u64(fo, "size"), fr.hash(fo, "sha256")});
  }
  return m;
}

ExpertManifest ExpertManifest::load(const std::string& path) { return parse(readInputFile(path, kManifestInput), path); }

void ExpertManifest::save(const std::string& path) const { writeFileAtomic(path, toJson()); }

}  // namespace k3
