// exp and expm1 on 16 floats at a time (AVX-512F). Include only from
// *_avx512.cpp files. The same range reduction, polynomial and rounding
// steps as vector_math_avx2.h, with the power of two applied by vscalefps
// instead of built from exponent bits: every result, special values and
// subnormals included, has the bits of exp8 / expm1_8 (tests/kernels/
// ops_simd_test.cpp checks that over a sweep of inputs), so the two ISAs
// are interchangeable for the accuracy bounds documented there.
// Thread-safety: pure inline functions; safe from any thread.
#pragma once

#include <immintrin.h>

#include "k3/kernels/vector_math_constants.h"

namespace k3::kernels::avx512 {

// x = j·ln2 + f with integer-valued j and |f| ≤ ln2/2 (plus rounding slack);
// ln2 in two parts (Cody–Waite), as avx2::reduceLn2.
struct Ln2Reduced {
  __m512 f;
  __m512 j;
};

inline Ln2Reduced reduceLn2(__m512 x) {
  const __m512 j = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(vmath::kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_fnmadd_ps(j, _mm512_set1_ps(vmath::kLn2Hi), x);
  f = _mm512_fnmadd_ps(j, _mm512_set1_ps(vmath::kLn2Lo), f);
  return {f, j};
}

// expm1(f) for |f| ≤ ~0.35: Taylor to degree 7 (as avx2::expm1Reduced).
inline __m512 expm1Reduced(__m512 f) {
  __m512 p = _mm512_set1_ps(vmath::kExpm1Taylor[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(vmath::kExpm1Taylor[k]));
  return _mm512_fmadd_ps(_mm512_mul_ps(f, f), p, f);
}

inline __m512 nanFrom(__m512 x, __m512 y) {  // y, except x where x is NaN
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

inline __m512 exp16(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(vmath::kExpMin)), _mm512_set1_ps(vmath::kExpMax));
  const Ln2Reduced r = reduceLn2(xc);
  const __m512 p = expm1Reduced(r.f);
  // 1 + p rounds once (avx2: (p·t1 + t1) with t1 a power of two, the same
  // rounding); scaling by 2^j is exact, or rounds once into the subnormals
  // (avx2: the product by its second power of two).
  return nanFrom(x, _mm512_scalef_ps(_mm512_add_ps(p, _mm512_set1_ps(1.0f)), r.j));
}

inline __m512 expm1_16(__m512 x) {
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(vmath::kExpm1Min)), _mm512_set1_ps(vmath::kExpMax));
  const Ln2Reduced r = reduceLn2(xc);
  const __m512 p = expm1Reduced(r.f);
  // 2^j·(1+p) − 1 = 2·(p·t + (t − ½)) with t = 2^(j−1): no cancellation at j = 0.
  const __m512 t = _mm512_scalef_ps(_mm512_set1_ps(0.5f), r.j);
  const __m512 y = _mm512_fmadd_ps(p, t, _mm512_sub_ps(t, _mm512_set1_ps(0.5f)));
  return nanFrom(x, _mm512_add_ps(y, y));
}

}  // namespace k3::kernels::avx512
