// exp, expm1, tanh and σ on 8 floats at a time (AVX2 + FMA). Include only
// from *_avx2.cpp files: everything here is compiled with -mavx2 -mfma.
//
// Accuracy against the double libm functions rounded to float, worst case
// measured over 3.2e8 inputs (every 7th float with |x| ≤ 200, subnormals
// included); tests/kernels/ops_simd_test.cpp asserts the bound in brackets:
//   exp8 1 ulp [2] (results down into the subnormal range round once)
//   expm1_8 2 ulp [2]
//   tanh8 2 ulp [3]
//   sigmoid8 2 ulp [3] (0 once e^−x overflows, as the scalar formula)
// Special values follow the libm functions: NaN → NaN, exp(+inf) = +inf,
// exp(−inf) = 0, exp overflows to +inf above ~88.72, tanh(±inf) = ±1,
// tanh(±0) = ±0. (expm1 of −0 gives +0.)
// Thread-safety: pure inline functions; safe from any thread.
#pragma once

#include <immintrin.h>

#include "k3/kernels/vector_math_constants.h"

#include <cstddef>

namespace k3::kernels::avx2 {

// x = i·ln2 + f with integer i and |f| ≤ ln2/2 (plus rounding slack). ln2 in two
// parts (Cody–Waite) so that f keeps full precision.
struct Ln2Reduced {
  __m256 f;
  __m256i i;
};

inline Ln2Reduced reduceLn2(__m256 x) {
  const __m256 j = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(vmath::kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 f = _mm256_fnmadd_ps(j, _mm256_set1_ps(vmath::kLn2Hi), x);
  f = _mm256_fnmadd_ps(j, _mm256_set1_ps(vmath::kLn2Lo), f);
  return {f, _mm256_cvtps_epi32(j)};
}

// expm1(f) for |f| ≤ ~0.35: Taylor series to degree 7, i.e.
// f + f²·(1/2 + f/6 + … + f⁵/5040). Truncation error < f⁸/8! ≈ 2e-8·|f|,
// well under half an ulp; the rest of the error is f32 rounding.
inline __m256 expm1Reduced(__m256 f) {
  __m256 p = _mm256_set1_ps(vmath::kExpm1Taylor[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(vmath::kExpm1Taylor[k]));
  return _mm256_fmadd_ps(_mm256_mul_ps(f, f), p, f);
}

// 2^i as a float for integer i in [−126, 127] (built from the exponent bits).
inline __m256 pow2i(__m256i i) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23));
}

inline __m256 nanFrom(__m256 x, __m256 y) {  // y, except x where x is NaN
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

inline __m256 exp8(__m256 x) {
  // Below −104 the result rounds to 0, above 89 to +inf; clamping keeps i in
  // [−150, 128] and lets those limits come out of the arithmetic itself.
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(vmath::kExpMin)), _mm256_set1_ps(vmath::kExpMax));
  const Ln2Reduced r = reduceLn2(xc);
  const __m256 p = expm1Reduced(r.f);
  // 2^i in two normal factors: (1+p)·2^i1 is exact-scaled, the last product
  // rounds once even when the result is subnormal.
  const __m256i i1 = _mm256_srai_epi32(r.i, 1);
  const __m256i i2 = _mm256_sub_epi32(r.i, i1);
  const __m256 t1 = pow2i(i1);
  const __m256 y = _mm256_mul_ps(_mm256_fmadd_ps(p, t1, t1), pow2i(i2));
  return nanFrom(x, y);
}

inline __m256 expm1_8(__m256 x) {
  // expm1 is −1 in f32 below about −17.3 and overflows above ~88.72.
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(vmath::kExpm1Min)), _mm256_set1_ps(vmath::kExpMax));
  const Ln2Reduced r = reduceLn2(xc);
  const __m256 p = expm1Reduced(r.f);
  // 2^i·(1+p) − 1 = 2·(p·t + (t − ½)) with t = 2^(i−1): no cancellation for i = 0.
  const __m256 t = pow2i(_mm256_sub_epi32(r.i, _mm256_set1_epi32(1)));
  const __m256 y = _mm256_fmadd_ps(p, t, _mm256_sub_ps(t, _mm256_set1_ps(0.5f)));
  return nanFrom(x, _mm256_add_ps(y, y));
}

// tanh|x| = −u/(u+2) with u = expm1(−2|x|) ∈ (−1, 0]: accurate for tiny |x|
// (no 1 − 2/(e^2x+1) cancellation), exactly 1 for large |x|; sign restored.
inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256 u = expm1_8(_mm256_mul_ps(a, _mm256_set1_ps(-2.0f)));
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(_mm256_setzero_ps(), u), _mm256_add_ps(u, _mm256_set1_ps(2.0f)));
  return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

// σ(x) = 1/(1+e^−x): 0 for x below ~−88.7 (e^−x = +inf), NaN for NaN.
inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

// Lanes [0, n) set, for masked loads/stores of a tail of n < 8 floats.
inline __m256i tailMask(size_t n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), idx);
}

// Sum of the 8 lanes, in a fixed order.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline double hsum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
  return _mm_cvtsd_f64(s);
}

}  // namespace k3::kernels::avx2
