// Safetensors element types: names, bit widths, and which ones hold floats.
// Thread-safety: pure functions over a constant table; safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace k3 {

enum class Dtype {
  BOOL, U8, I8, F8_E4M3, F8_E5M2, F8_E8M0, U16, I16, F16, BF16,
  U32, I32, F32, U64, I64, F64, F4,
};

// Accepts the canonical safetensors names plus the aliases the peer reads
// (F8_E4M3FN, float8_e4m3fn, F8_E8M0FNU).
std::optional<Dtype> parseDtype(std::string_view name);
std::string_view dtypeName(Dtype dtype);
size_t dtypeBits(Dtype dtype);
bool isFloatDtype(Dtype dtype);  // BF16, F16, F32, F64 (readable as f32)

}  // namespace k3
