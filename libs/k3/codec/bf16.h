// 16-bit float formats of the checkpoint: bfloat16 (most tensors) and IEEE
// binary16 (a few small ones). Scalar conversions are inline because every
// kernel's reference path uses them; the array forms are vectorised.
// Thread-safe: pure functions, no shared mutable state.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "k3/kernels/cpu_features.h"

namespace k3::codec {

constexpr float bitsToF32(uint32_t u) { return std::bit_cast<float>(u); }
constexpr uint32_t f32ToBits(float f) { return std::bit_cast<uint32_t>(f); }

// Exact: bf16 is the top half of an f32 (spec 3.1: shift left by 16).
inline float bf16ToF32(uint16_t h) { return bitsToF32(uint32_t(h) << 16); }

// Round to nearest, ties to even. Overflow rounds to +-inf like any RNE cast;
// NaN stays NaN (sign and top payload bits kept, quiet bit forced, so a NaN
// whose payload lives only in the low bits never turns into inf).
inline uint16_t f32ToBf16(float f) {
  uint32_t u = f32ToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// IEEE binary16 -> binary32, exact for every input: subnormals become normal
// f32 values, inf stays inf, NaN keeps sign and payload with the quiet bit set
// (what F16C's vcvtph2ps does, so every path gives the same bits).
inline float f16ToF32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return bitsToF32(sign);
    float mag = float(mant) * 0x1p-24f;  // exact: mant < 2^10
    return bitsToF32(sign | f32ToBits(mag));
  }
  if (exp == 31) {
    uint32_t nanBit = mant ? 0x00400000u : 0u;
    return bitsToF32(sign | 0x7f800000u | (mant << 13) | nanBit);
  }
  return bitsToF32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Array conversions on the best ISA (bits identical on every path).
void bf16ToF32(const uint16_t* in, float* out, size_t n);
void f16ToF32(const uint16_t* in, float* out, size_t n);
void f32ToBf16(const float* in, uint16_t* out, size_t n);

// The same on a named ISA (tests compare the paths); throws Unsupported when
// this CPU lacks it.
void bf16ToF32(kernels::Isa isa, const uint16_t* in, float* out, size_t n);
void f16ToF32(kernels::Isa isa, const uint16_t* in, float* out, size_t n);
void f32ToBf16(kernels::Isa isa, const float* in, uint16_t* out, size_t n);

}  // namespace k3::codec
