// Scalar quantizers (the reference the AVX2 path must match byte for byte) and
// their dispatch.
// Thread-safe: no shared mutable state.
#include "k3/codec/quantize.h"

#include <algorithm>
#include <cmath>

#include "k3/codec/codec_kernels.h"
#include "k3/io/error.h"
#include "k3/kernels/isa_dispatch.h"

namespace k3::codec {

namespace {
// rint in the default (nearest-even) mode, then clamp. The clamp is written so
// a NaN product lands on `hi` on every path (the AVX2 min/max do the same),
// instead of reaching an undefined float->int conversion.
inline int roundClamp(float v, float lo, float hi) {
  float r = std::rint(v);
  r = std::fmin(hi, r);
  r = std::fmax(lo, r);
  return int(r);
}
// max|w| ignoring NaN (matches _mm256_max_ps(|w|, acc) operand order).
inline float absMax(const float* w, size_t n) {
  float am = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float a = std::fabs(w[i]);
    am = a > am ? a : am;
  }
  return am;
}
}  // namespace

namespace scalar {
void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float s = absMax(row, cols) / 127.0f;
    if (s < kScaleFloor) s = kScaleFloor;
    float inv = 1.0f / s;
    for (size_t i = 0; i < cols; ++i) q[r * cols + i] = int8_t(roundClamp(row[i] * inv, -127.f, 127.f));
    scales[r] = s;
  }
}

void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales) {
  const size_t groups = rows * (cols / kInt4Group);
  for (size_t g = 0; g < groups; ++g) {
    const float* src = w + g * kInt4Group;
    float s = absMax(src, kInt4Group) / 7.0f;
    if (s < kScaleFloor) s = kScaleFloor;
    float inv = 1.0f / s;
    for (int k = 0; k < kInt4Group / 2; ++k) {
      int u0 = roundClamp(src[2 * k] * inv, -8.f, 7.f) + 8;
      int u1 = roundClamp(src[2 * k + 1] * inv, -8.f, 7.f) + 8;
      packed[g * (kInt4Group / 2) + k] = uint8_t(u0 | (u1 << 4));
    }
    scales[g] = s;
  }
}
void dequantizeInt8Rows(const int8_t* q, const float* scales, size_t rows, size_t cols, float* out) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) out[r * cols + c] = float(q[r * cols + c]) * scales[r];
}
}  // namespace scalar

void quantizeInt8Rows(kernels::Isa isa, const float* w, size_t rows, size_t cols, int8_t* q,
                      float* scales) {
  K3_KERNEL_FOR(kernels::requireIsa(isa, "quantizeInt8Rows"), quantizeInt8Rows)(w, rows, cols, q, scales);
}

void dequantizeInt8Rows(kernels::Isa isa, const int8_t* q, const float* scales, size_t rows, size_t cols,
                        float* out) {
  K3_KERNEL_FOR(kernels::requireIsa(isa, "dequantizeInt8Rows"), dequantizeInt8Rows)(q, scales, rows, cols, out);
}

void quantizeInt4G64(kernels::Isa isa, const float* w, size_t rows, size_t cols, uint8_t* packed,
                     float* scales) {
  if (cols % kInt4Group)
    fail(ErrorKind::Usage, "quantizeInt4G64: ", cols, " columns is not a multiple of 64");
  K3_KERNEL_FOR(kernels::requireIsa(isa, "quantizeInt4G64"), quantizeInt4G64)(w, rows, cols, packed, scales);
}

void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales) {
  quantizeInt8Rows(kernels::bestIsa(), w, rows, cols, q, scales);
}
void dequantizeInt8Rows(const int8_t* q, const float* scales, size_t rows, size_t cols, float* out) {
  dequantizeInt8Rows(kernels::bestIsa(), q, scales, rows, cols, out);
}
void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales) {
  quantizeInt4G64(kernels::bestIsa(), w, rows, cols, packed, scales);
}

void downcastInt8ToInt4G64(const int8_t* q8, const float* rowScales, size_t rows, size_t cols,
                           uint8_t* packed, float* scales) {
  if (cols % kInt4Group)
    fail(ErrorKind::Usage, "downcastInt8ToInt4G64: ", cols, " columns is not a multiple of 64");
  const size_t gpr = cols / kInt4Group;
  for (size_t r = 0; r < rows; ++r) {
    const float s8 = rowScales[r];
    for (size_t g = 0; g < gpr; ++g) {
      const int8_t* src = q8 + r * cols + g * kInt4Group;
      int am = 0;
      for (int i = 0; i < kInt4Group; ++i) am = std::max(am, std::abs(int(src[i])));
      float s = float(am) * s8 / 7.0f;
      if (s < kScaleFloor) s = kScaleFloor;
      float inv = s8 / s;
      uint8_t* dst = packed + (r * gpr + g) * (kInt4Group / 2);
      for (int k = 0; k < kInt4Group / 2; ++k) {
        int u0 = roundClamp(float(src[2 * k]) * inv, -8.f, 7.f) + 8;
        int u1 = roundClamp(float(src[2 * k + 1]) * inv, -8.f, 7.f) + 8;
        dst[k] = uint8_t(u0 | (u1 << 4));
      }
      scales[r * gpr + g] = s;
    }
  }
}

}  // namespace k3::codec
