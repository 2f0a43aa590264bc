// AVX2 + FMA kernels of ops.h. Elementwise ops run their tail through the same
// vector code (masked loads/stores), so an element's result does not depend
// on where it sits in the array. Reductions use a fixed lane/accumulator
// order for a given length: deterministic, but not the scalar order, so
// results differ from scalar:: by f32 rounding (sums of squares and AttnRes
// scores stay in double: products of floats are exact there).
#include <immintrin.h>

#include <cmath>
#include <limits>

#include "k3/kernels/ops_kernels.h"
#include "k3/kernels/vector_math_avx2.h"

namespace k3::kernels::avx2 {

namespace {

// out[i] = f(x[i]) for 8 lanes at a time; out may alias x.
template <class F>
inline void map1(const float* x, size_t n, float* out, F f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i m = tailMask(n - i);
    _mm256_maskstore_ps(out + i, m, f(_mm256_maskload_ps(x + i, m)));
  }
}

// out[i] = f(a[i], b[i]); out may alias a or b.
template <class F>
inline void map2(const float* a, const float* b, size_t n, float* out, F f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  if (i < n) {
    const __m256i m = tailMask(n - i);
    _mm256_maskstore_ps(out + i, m, f(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
}

// The 8 floats widened to two vectors of 4 doubles (exact).
inline __m256d lowF64(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
inline __m256d highF64(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

}  // namespace

void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out) {
  // x² of a float is exact in double, so the FMAs below round only the sums.
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 u = _mm256_loadu_ps(x + i), v = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_fmadd_pd(lowF64(u), lowF64(u), a0);
    a1 = _mm256_fmadd_pd(highF64(u), highF64(u), a1);
    a2 = _mm256_fmadd_pd(lowF64(v), lowF64(v), a2);
    a3 = _mm256_fmadd_pd(highF64(v), highF64(v), a3);
  }
  for (; i < n; i += 8) {
    const __m256 u = i + 8 <= n ? _mm256_loadu_ps(x + i) : _mm256_maskload_ps(x + i, tailMask(n - i));
    a0 = _mm256_fmadd_pd(lowF64(u), lowF64(u), a0);
    a1 = _mm256_fmadd_pd(highF64(u), highF64(u), a1);
  }
  const double ms = hsum(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
  const float r = 1.0f / std::sqrt(static_cast<float>(ms / static_cast<double>(n)) + eps);
  const __m256 vr = _mm256_set1_ps(r);
  // (x·r)·w in that order, as the scalar reference: bit-identical to it.
  map2(x, w, n, out, [&](__m256 xv, __m256 wv) { return _mm256_mul_ps(_mm256_mul_ps(xv, vr), wv); });
}

void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out) {
  // One division for the whole product where the plain form has five (two
  // arguments, two tanh, σ), which bounded this loop. b·tanh(y/b) is even in b,
  // so with v = expm1(−2|y|/|b|) ∈ (−1, 0], tanh(|y|/|b|) = −v/(v+2), and
  // σ(g) = 1/(1+e^−g):
  //   SiTU(g, u) = ±|b1 b2|·v1·v2 / ((v1+2)(v2+2)(1+e^−g)), sign of g·u.
  // The denominator is ≥ 1; e^−g = +inf gives 0, as σ does.
  const float a1 = std::fabs(b1), a2 = std::fabs(b2);
  const __m256 k1 = _mm256_set1_ps(-2.0f / a1), k2 = _mm256_set1_ps(-2.0f / a2), ab = _mm256_set1_ps(a1 * a2);
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  map2(gate, up, n, out, [&](__m256 g, __m256 u) {
    const __m256 v1 = expm1_8(_mm256_mul_ps(_mm256_andnot_ps(sign, g), k1));
    const __m256 v2 = expm1_8(_mm256_mul_ps(_mm256_andnot_ps(sign, u), k2));
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    const __m256 den = _mm256_mul_ps(_mm256_mul_ps(_mm256_add_ps(v1, two), _mm256_add_ps(v2, two)), _mm256_add_ps(one, e));
    const __m256 r = _mm256_div_ps(_mm256_mul_ps(_mm256_mul_ps(v1, v2), ab), den);
    return _mm256_xor_ps(r, _mm256_and_ps(_mm256_xor_ps(g, u), sign));
  });
}

void softmax(float* x, size_t n) {
  if (n == 0) return;
  const __m256 negInf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 vmax = negInf;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  const __m256i tail = tailMask(n - i);  // n − i < 8 here
  if (i < n) vmax = _mm256_max_ps(vmax, _mm256_blendv_ps(negInf, _mm256_maskload_ps(x + i, tail), _mm256_castsi256_ps(tail)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const __m256 m = _mm256_set1_ps(_mm_cvtss_f32(m4));
  __m256 sum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, tail), m)), _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(x + i, tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 s = _mm256_set1_ps(hsum(sum));
  map1(x, n, x, [&](__m256 v) { return _mm256_div_ps(v, s); });
}

float dot(const float* a, const float* b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  if (i < n) {
    const __m256i m = tailMask(n - i);
    s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

void axpy(float a, const float* x, float* y, size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  map2(x, y, n, y, [&](__m256 xv, __m256 yv) { return _mm256_fmadd_ps(va, xv, yv); });
}

void mulSigmoid(float* x, const float* g, size_t n) {
  map2(x, g, n, x, [](__m256 xv, __m256 gv) { return _mm256_mul_ps(xv, sigmoid8(gv)); });
}

void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv) {
  // Products of two floats are exact in double: only the sums round.
  __m256d n0 = _mm256_setzero_pd(), n1 = n0, q0 = n0, q1 = n0;
  for (size_t i = 0; i < n; i += 8) {
    const bool full = i + 8 <= n;
    const __m256i m = tailMask(n - i);
    const __m256 a = full ? _mm256_loadu_ps(v + i) : _mm256_maskload_ps(v + i, m);
    const __m256 b = full ? _mm256_loadu_ps(w + i) : _mm256_maskload_ps(w + i, m);
    n0 = _mm256_fmadd_pd(lowF64(a), lowF64(b), n0);
    n1 = _mm256_fmadd_pd(highF64(a), highF64(b), n1);
    q0 = _mm256_fmadd_pd(lowF64(a), lowF64(a), q0);
    q1 = _mm256_fmadd_pd(highF64(a), highF64(a), q1);
  }
  *vw = hsum(_mm256_add_pd(n0, n1));
  *vv = hsum(_mm256_add_pd(q0, q1));
}

void expArray(const float* x, size_t n, float* out) { map1(x, n, out, exp8); }
void expm1Array(const float* x, size_t n, float* out) { map1(x, n, out, expm1_8); }
void tanhArray(const float* x, size_t n, float* out) { map1(x, n, out, tanh8); }
void sigmoidArray(const float* x, size_t n, float* out) { map1(x, n, out, sigmoid8); }

}  // namespace k3::kernels::avx2
