// Internal, for *_avx2.cpp files only: the AVX2 steps every int8/int4
// quantizer shares (max|w|, the floored scale, rint-and-clamp to int8 lanes),
// written once so the weight quantizers (quantize_avx2.cpp) and the IDOT
// activation quantizer (kernels/act_quantize_avx2.cpp) round alike. Pure
// functions: thread-safe.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstddef>

#include "k3/codec/quantize.h"

namespace k3::codec::avx2 {
namespace {

// max|w| over n floats; NaN ignored (max_ps returns its second operand then).
inline float absMax(const float* w, size_t n) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(w + i), absMask), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float am = 0.0f;
  for (float v : lanes) am = v > am ? v : am;
  for (; i < n; ++i) {
    float a = std::fabs(w[i]);
    am = a > am ? a : am;
  }
  return am;
}

inline float scaleFor(float am, float qmax) {
  float s = am / qmax;
  return s < kScaleFloor ? kScaleFloor : s;
}

// rint(w*inv) clamped to [lo, hi] as int32; NaN -> hi like the scalar code.
inline __m256i roundClamp(__m256 w, __m256 inv, __m256 lo, __m256 hi) {
  __m256 r = _mm256_round_ps(_mm256_mul_ps(w, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_min_ps(r, hi);  // NaN -> hi
  r = _mm256_max_ps(r, lo);
  return _mm256_cvtps_epi32(r);
}

// 32 floats -> 32 int8 in order, values already within int8.
inline __m256i roundClamp32(const float* w, __m256 inv, __m256 lo, __m256 hi) {
  __m256i a = roundClamp(_mm256_loadu_ps(w), inv, lo, hi);
  __m256i b = roundClamp(_mm256_loadu_ps(w + 8), inv, lo, hi);
  __m256i c = roundClamp(_mm256_loadu_ps(w + 16), inv, lo, hi);
  __m256i d = roundClamp(_mm256_loadu_ps(w + 24), inv, lo, hi);
  __m256i ab = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
  __m256i cd = _mm256_packs_epi32(c, d);
  __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace
}  // namespace k3::codec::avx2
