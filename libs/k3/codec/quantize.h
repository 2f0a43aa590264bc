// Weight quantizers of the container format, bit-exact with spec 5.3 (int8 per
// row), 5.4 (int4, groups of 64) and 5.9 (int8 -> int4 downcast). Every ISA
// path gives the same bytes: max|w| is order-independent, the scale is one f32
// division, each element is one f32 multiply and a round-half-even.
// Thread-safe: pure functions, no shared mutable state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/kernels/cpu_features.h"

namespace k3::codec {

inline constexpr float kScaleFloor = 1e-20f;  // spec: s < 1e-20 -> s = 1e-20
inline constexpr int kInt4Group = 64;

// w: f32 [rows, cols] row-major. q: int8 [rows*cols], scales: float[rows].
//   am = max|w[r,:]|, s = max(am / 127.0f, 1e-20f), inv = 1.0f / s,
//   q = clamp(rint(w * inv), -127, 127).
void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales);

// cols % 64 == 0 (throws Usage otherwise). packed: [rows*cols/2] bytes, byte k
// of a row = u[2k] | u[2k+1] << 4 with u = clamp(rint(w*inv), -8, 7) + 8;
// scales: float[rows*cols/64], s = max(am / 7.0f, 1e-20f) per 64-group.
void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales);

// Spec 5.9 load-time downcast of an int8 per-row tensor to int4-g64 (cols % 64
// == 0): per group am = max|q8| (integer), s = max(am * s8 / 7.0f, 1e-20f),
// inv = s8 / s, v = clamp(rint(q8 * inv), -8, 7). Not bit-identical to
// quantizing the f32 weights directly (it is not meant to be).
void downcastInt8ToInt4G64(const int8_t* q8, const float* rowScales, size_t rows, size_t cols,
                           uint8_t* packed, float* scales);

// The inverse of quantizeInt8Rows: out[r, c] = float(q[r, c]) * scales[r],
// one f32 multiply each, so every ISA gives the same bits (dequantizeRow's
// int8 case; MLA's kv_b rows are dequantised this way every decode step).
void dequantizeInt8Rows(const int8_t* q, const float* scales, size_t rows, size_t cols, float* out);

// The same quantizers on a named ISA (tests); throw Unsupported if absent.
void quantizeInt8Rows(kernels::Isa isa, const float* w, size_t rows, size_t cols, int8_t* q, float* scales);
void dequantizeInt8Rows(kernels::Isa isa, const int8_t* q, const float* scales, size_t rows, size_t cols,
                        float* out);
void quantizeInt4G64(kernels::Isa isa, const float* w, size_t rows, size_t cols, uint8_t* packed,
                     float* scales);

}  // namespace k3::codec
