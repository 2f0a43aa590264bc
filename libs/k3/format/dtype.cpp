#include "k3/format/dtype.h"

#include <array>
#include <utility>

namespace k3 {
namespace {

struct DtypeEntry {
  std::string_view name;
  Dtype dtype;
  size_t bits;
};

constexpr std::array<DtypeEntry, 17> kDtypes{{
    {"BOOL", Dtype::BOOL, 8},     {"U8", Dtype::U8, 8},
    {"I8", Dtype::I8, 8},         {"F8_E4M3", Dtype::F8_E4M3, 8},
    {"F8_E5M2", Dtype::F8_E5M2, 8}, {"F8_E8M0", Dtype::F8_E8M0, 8},
    {"U16", Dtype::U16, 16},      {"I16", Dtype::I16, 16},
    {"F16", Dtype::F16, 16},      {"BF16", Dtype::BF16, 16},
    {"U32", Dtype::U32, 32},      {"I32", Dtype::I32, 32},
    {"F32", Dtype::F32, 32},      {"U64", Dtype::U64, 64},
    {"I64", Dtype::I64, 64},      {"F64", Dtype::F64, 64},
    {"F4", Dtype::F4, 4},
}};

}  // namespace

std::optional<Dtype> parseDtype(std::string_view name) {
  for (const auto& e : kDtypes)
    if (e.name == name) return e.dtype;
  if (name == "F8_E4M3FN" || name == "float8_e4m3fn") return Dtype::F8_E4M3;
  if (name == "F8_E8M0FNU") return Dtype::F8_E8M0;
  return std::nullopt;
}

std::string_view dtypeName(Dtype dtype) {
  for (const auto& e : kDtypes)
    if (e.dtype == dtype) return e.name;
  return "?";
}

size_t dtypeBits(Dtype dtype) {
  for (const auto& e : kDtypes)
    if (e.dtype == dtype) return e.bits;
  return 0;
}

bool isFloatDtype(Dtype dtype) {
  return dtype == Dtype::BF16 || dtype == Dtype::F16 || dtype == Dtype::F32 ||
         dtype == Dtype::F64;
}

}  // namespace k3
