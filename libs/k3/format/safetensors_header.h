// SafetensorsHeader: the parsed and validated JSON header of one safetensors
// file. Parsing is a pure function of the bytes (fuzzed in tests/fuzz).
//
// Validation (spec §3.2 tightened to the HF rules): the header is a JSON
// object; every entry has a known dtype, a shape of rank ≤ 8 whose element
// count times the dtype size equals its byte span exactly, and offsets
// 0 ≤ begin ≤ end; sorted by offset the tensors tile the data section from 0
// to its end with no hole and no overlap. `__metadata__` is a string map.
// Thread-safety: parsing is pure; a parsed header is a value, safe to share
// read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "k3/format/dtype.h"

namespace k3 {

constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;  // as the HF reader

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // relative to the data section
  uint64_t end = 0;

  uint64_t nbytes() const { return end - begin; }
  uint64_t numel() const;
};

// "[2, 3]": a shape as error messages print it.
std::string shapeText(const std::vector<uint64_t>& shape);
// "[2,3]": the same without spaces, as k3-run's container opener prints it.
std::string compactShapeText(const std::vector<uint64_t>& shape);

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in header (document) order
  std::vector<std::pair<std::string, std::string>> metadata;
  std::unordered_map<std::string, size_t> index;  // name -> position in tensors

  const TensorInfo* find(std::string_view name) const;
  // Positions into `tensors`, sorted by data offset (ties keep header order).
  std::vector<size_t> offsetOrder() const;
};

// Parses `json` (the N header bytes, padding included). `dataSize` is the
// byte length of the data section (file size − 8 − N). Throws
// k3::Error(Format) naming `path` and the tensor.
SafetensorsHeader parseSafetensorsHeader(std::string_view json, uint64_t dataSize,
                                         const std::string& path);

}  // namespace k3
