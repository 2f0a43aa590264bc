// AVX2 weight quantizers (spec 5.3/5.4), byte-identical to the scalar ones in
// quantize.cpp: max|w| is exact in any order, the scale is the same scalar
// division, and vroundps(nearest) is rint in the default mode. Thread-safe.
#include <immintrin.h>

#include <cmath>

#include "k3/codec/codec_kernels.h"
#include "k3/codec/quantize.h"
#include "k3/codec/round_clamp_avx2.h"

namespace k3::codec::avx2 {

namespace {

void quantizeRowInt8(const float* w, size_t n, int8_t* q, float inv) {
  const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f);
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), roundClamp32(w + i, vinv, lo, hi));
  for (; i < n; ++i) {
    float r = std::fmax(-127.f, std::fmin(127.f, std::rint(w[i] * inv)));
    q[i] = int8_t(r);
  }
}

}  // namespace

void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float s = scaleFor(absMax(row, cols), 127.0f);
    quantizeRowInt8(row, cols, q + r * cols, 1.0f / s);
    scales[r] = s;
  }
}

void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales) {
  const size_t groups = rows * (cols / kInt4Group);
  const __m256 lo = _mm256_set1_ps(-8.f), hi = _mm256_set1_ps(7.f);
  const __m256i eight = _mm256_set1_epi8(8), low = _mm256_set1_epi16(0x00ff);
  for (size_t g = 0; g < groups; ++g) {
    const float* src = w + g * kInt4Group;
    float s = scaleFor(absMax(src, kInt4Group), 7.0f);
    __m256 inv = _mm256_set1_ps(1.0f / s);
    // u in [0,15] as bytes, columns in order; then even | odd << 4 per pair.
    __m256i u0 = _mm256_add_epi8(roundClamp32(src, inv, lo, hi), eight);
    __m256i u1 = _mm256_add_epi8(roundClamp32(src + 32, inv, lo, hi), eight);
    __m256i p0 = _mm256_or_si256(_mm256_and_si256(u0, low), _mm256_srli_epi16(u0, 4));
    __m256i p1 = _mm256_or_si256(_mm256_and_si256(u1, low), _mm256_srli_epi16(u1, 4));
    // p: 16-bit words holding one byte each -> pack to bytes, fix lane order.
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(p0, p1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + g * (kInt4Group / 2)), bytes);
    scales[g] = s;
  }
}

// 8 columns a step: widen, convert (exact), one multiply by the row's scale.
void dequantizeInt8Rows(const int8_t* q, const float* scales, size_t rows, size_t cols, float* out) {
  for (size_t r = 0; r < rows; ++r) {
    const int8_t* src = q + r * cols;
    float* dst = out + r * cols;
    const float s = scales[r];
    const __m256 vs = _mm256_set1_ps(s);
    size_t c = 0;
    for (; c + 8 <= cols; c += 8) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + c));
      _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), vs));
    }
    for (; c < cols; ++c) dst[c] = float(src[c]) * s;
  }
}

}  // namespace k3::codec::avx2
