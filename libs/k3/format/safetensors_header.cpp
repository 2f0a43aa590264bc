#include "k3/format/safetensors_header.h"

#include <simdjson.h>

#include <algorithm>
#include <numeric>
#include <unordered_set>

#include "k3/io/error.h"

namespace k3 {

uint64_t TensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::string shapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += cat(i ? ", " : "", shape[i]);
  return s + "]";
}

std::string compactShapeText(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += cat(i ? "," : "", shape[i]);
  return s + "]";
}

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &tensors[it->second];
}

std::vector<size_t> SafetensorsHeader::offsetOrder() const {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].begin < tensors[b].begin;
  });
  return order;
}

namespace {

[[noreturn]] void bad(const std::string& path, std::string_view tensor, const std::string& what) {
  if (tensor.empty()) fail(ErrorKind::Format, path, ": ", what);
  fail(ErrorKind::Format, path, ": tensor '", tensor, "': ", what);
}

uint64_t readUint(simdjson::dom::element e, const std::string& path, std::string_view tensor,
                  const char* field) {
  uint64_t v = 0;
  if (e.is_uint64()) {
    v = e.get_uint64().value_unsafe();
  } else if (e.is_int64()) {
    bad(path, tensor, cat(field, " has a negative value"));
  } else {
    bad(path, tensor, cat(field, " holds a non-integer"));
  }
  if (v >= (uint64_t{1} << 63)) bad(path, tensor, cat(field, " value out of range"));
  return v;
}

TensorInfo parseEntry(std::string_view name, simdjson::dom::element value, const std::string& path) {
  TensorInfo t;
  t.name = std::string(name);
  simdjson::dom::object obj;
  if (value.get_object().get(obj) != simdjson::SUCCESS) bad(path, name, "entry is not an object");

  std::string_view dtypeStr;
  if (obj["dtype"].get_string().get(dtypeStr) != simdjson::SUCCESS)
    bad(path, name, "missing or non-string \"dtype\"");
  auto dtype = parseDtype(dtypeStr);
  if (!dtype) bad(path, name, cat("unknown dtype \"", dtypeStr, "\""));
  t.dtype = *dtype;

  simdjson::dom::array shape;
  if (obj["shape"].get_array().get(shape) != simdjson::SUCCESS)
    bad(path, name, "missing or non-array \"shape\"");
  if (shape.size() > 8) bad(path, name, cat("shape rank ", shape.size(), " exceeds 8"));
  for (auto d : shape) t.shape.push_back(readUint(d, path, name, "shape"));

  simdjson::dom::array offsets;
  if (obj["data_offsets"].get_array().get(offsets) != simdjson::SUCCESS)
    bad(path, name, "missing or non-array \"data_offsets\"");
  if (offsets.size() != 2)
    bad(path, name, cat("data_offsets has ", offsets.size(), " entries, expected 2"));
  t.begin = readUint(offsets.at(0).value_unsafe(), path, name, "data_offsets");
  t.end = readUint(offsets.at(1).value_unsafe(), path, name, "data_offsets");
  if (t.begin > t.end) bad(path, name, cat("data_offsets [", t.begin, ", ", t.end, "] are reversed"));

  // numel * bits / 8 with overflow checks.
  unsigned __int128 bits = dtypeBits(t.dtype);
  for (uint64_t d : t.shape) {
    bits *= d;
    if (bits > (static_cast<unsigned __int128>(1) << 66))
      bad(path, name, "shape element count overflows");
  }
  if (bits % 8 != 0) bad(path, name, "sub-byte tensor does not end on a byte boundary");
  const uint64_t expect = static_cast<uint64_t>(bits / 8);
  if (expect != t.nbytes())
    bad(path, name,
        cat("byte span ", t.nbytes(), " does not match shape x dtype (", expect, " bytes for ",
            dtypeName(t.dtype), ")"));
  return t;
}

}  // namespace

SafetensorsHeader parseSafetensorsHeader(std::string_view json, uint64_t dataSize,
                                         const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  auto err = parser.parse(json.data(), json.size(), true).get(root);
  if (err) bad(path, "", cat("header is not valid JSON (", simdjson::error_message(err), ")"));
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) bad(path, "", "header is not a JSON object");

  SafetensorsHeader h;
  std::unordered_set<std::string_view> seen;
  for (auto field : obj) {
    if (!seen.insert(field.key).second) bad(path, field.key, "duplicate tensor name in header");
    if (field.key == "__metadata__") {
      simdjson::dom::object meta;
      if (field.value.get_object().get(meta) != simdjson::SUCCESS)
        bad(path, "", "__metadata__ is not an object");
      for (auto m : meta) {
        std::string_view v;
        if (m.value.get_string().get(v) != simdjson::SUCCESS)
          bad(path, "", cat("__metadata__ value for \"", m.key, "\" is not a string"));
        h.metadata.emplace_back(std::string(m.key), std::string(v));
      }
      continue;
    }
    h.tensors.push_back(parseEntry(field.key, field.value, path));
  }
  for (size_t i = 0; i < h.tensors.size(); ++i) h.index.emplace(h.tensors[i].name, i);

  // The tensors must tile [0, dataSize) exactly.
  uint64_t cursor = 0;
  const TensorInfo* prev = nullptr;
  for (size_t i : h.offsetOrder()) {
    const TensorInfo& t = h.tensors[i];
    if (t.end > dataSize)
      bad(path, t.name, cat("data_offsets end ", t.end, " is beyond the data section (", dataSize,
                            " bytes)"));
    if (t.begin < cursor)
      bad(path, t.name, cat("overlaps tensor '", prev ? prev->name : "", "' (begins at ", t.begin,
                            ", previous ends at ", cursor, ")"));
    if (t.begin > cursor)
      bad(path, t.name, cat("hole of ", t.begin - cursor, " bytes before it (begins at ", t.begin,
                            ", previous ends at ", cursor, ")"));
    cursor = t.end;
    prev = &t;
  }
  if (cursor != dataSize)
    bad(path, "", cat("data section is ", dataSize, " bytes but tensors cover ", cursor,
                      " (trailing bytes)"));
  return h;
}

}  // namespace k3
