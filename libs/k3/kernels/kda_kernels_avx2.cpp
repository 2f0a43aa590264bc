// AVX2 + FMA versions of the KDA inner loops (kda_kernels.h).
#include <immintrin.h>

#include <cmath>

#include "k3/kernels/kda_kernels.h"
#include "k3/kernels/ops_kernels.h"
#include "k3/kernels/vector_math_avx2.h"

namespace k3::kernels::avx2 {

namespace {

inline __m256 silu8(__m256 x) { return _mm256_mul_ps(x, sigmoid8(x)); }

// In-lane 4×4 transposes between 8 windows of 4 ([c][K], c = 0..7) and 4
// vectors of 8 channels (one per window slot). The channel order inside those
// vectors is 0,2,4,6,1,3,5,7, the same for taps, windows and inputs.
inline void windowsToSlots(const float* p, __m256 s[4]) {
  const __m256 w0 = _mm256_loadu_ps(p), w1 = _mm256_loadu_ps(p + 8);
  const __m256 w2 = _mm256_loadu_ps(p + 16), w3 = _mm256_loadu_ps(p + 24);
  const __m256 t0 = _mm256_unpacklo_ps(w0, w1), t1 = _mm256_unpackhi_ps(w0, w1);
  const __m256 t2 = _mm256_unpacklo_ps(w2, w3), t3 = _mm256_unpackhi_ps(w2, w3);
  s[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  s[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  s[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  s[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

inline void slotsToWindows(const __m256 s[4], float* p) {
  const __m256 u0 = _mm256_unpacklo_ps(s[0], s[1]), u1 = _mm256_unpackhi_ps(s[0], s[1]);
  const __m256 u2 = _mm256_unpacklo_ps(s[2], s[3]), u3 = _mm256_unpackhi_ps(s[2], s[3]);
  _mm256_storeu_ps(p, _mm256_shuffle_ps(u0, u2, 0x44));
  _mm256_storeu_ps(p + 8, _mm256_shuffle_ps(u0, u2, 0xEE));
  _mm256_storeu_ps(p + 16, _mm256_shuffle_ps(u1, u3, 0x44));
  _mm256_storeu_ps(p + 24, _mm256_shuffle_ps(u1, u3, 0xEE));
}

// One column block [j0, j0 + 8·NV) of the delta rule, for n tokens in order.
// Every column of S is independent (kS_j, δ_j, o_j use column j only), and
// each lane accumulates over the key rows a = 0..d−1 in order, like the
// scalar reference; only FMA contraction differs from it. Token t's second
// pass over the rows (decay, rank-1 write along k, read with q) also reads
// token t+1's kS from the rows it has just written, so n tokens take n + 1
// passes over a block that stays in L1, with one load and one store per
// element and pass. The decayed rows are not stored between the two uses of
// a token: its write pass recomputes them (the same multiply, the same bits).
// d = 128, 64 tokens, one thread, us per token and head: two passes per
// token storing twice 2.41, storing once 2.06-2.43, this 1.60-1.64.
//
// Token t's write pass over the rows: S ← decayed S + k·δᵀ, out += q·S;
// with Next (a token t+1 follows) also next += k'·(α'∘S), token t+1's kS.
template <int NV, bool Next>
inline void writePass(float* S, size_t d, size_t j0, const float* al0, const float* k0, const float* q0,
                      const float* al1, const float* k1, const __m256 (&delta)[NV], __m256 (&out)[NV],
                      __m256 (&next)[NV]) {
  for (size_t a = 0; a < d; ++a) {
    float* row = S + a * d + j0;
    const __m256 al = _mm256_set1_ps(al0[a]), ka = _mm256_set1_ps(k0[a]), qa = _mm256_set1_ps(q0[a]);
    const __m256 al2 = Next ? _mm256_set1_ps(al1[a]) : al, kb = Next ? _mm256_set1_ps(k1[a]) : ka;
    for (int u = 0; u < NV; ++u) {
      const __m256 r = _mm256_fmadd_ps(ka, delta[u], _mm256_mul_ps(_mm256_loadu_ps(row + 8 * u), al));
      _mm256_storeu_ps(row + 8 * u, r);
      out[u] = _mm256_fmadd_ps(qa, r, out[u]);
      if constexpr (Next) next[u] = _mm256_fmadd_ps(kb, _mm256_mul_ps(r, al2), next[u]);
    }
  }
}

template <int NV>
inline void deltaColumns(float* S, size_t d, size_t j0, size_t n, const float* alpha, const float* k,
                         const float* q, const float* v, size_t stride, const float* beta, float* o) {
  __m256 kS[NV];  // token t's kS, then its δ
  for (int u = 0; u < NV; ++u) kS[u] = _mm256_setzero_ps();
  for (size_t a = 0; a < d; ++a) {  // token 0: kS of the decayed rows
    const float* row = S + a * d + j0;
    const __m256 al = _mm256_set1_ps(alpha[a]), ka = _mm256_set1_ps(k[a]);
    for (int u = 0; u < NV; ++u) kS[u] = _mm256_fmadd_ps(ka, _mm256_mul_ps(_mm256_loadu_ps(row + 8 * u), al), kS[u]);
  }
  for (size_t t = 0; t < n; ++t) {
    const float* al0 = alpha + t * d;
    const float* k0 = k + t * d;
    const __m256 vb = _mm256_set1_ps(beta[t]);
    for (int u = 0; u < NV; ++u)
      kS[u] = _mm256_mul_ps(vb, _mm256_sub_ps(_mm256_loadu_ps(v + t * stride + j0 + 8 * u), kS[u]));
    __m256 out[NV], next[NV];
    for (int u = 0; u < NV; ++u) out[u] = next[u] = _mm256_setzero_ps();
    if (t + 1 < n)
      writePass<NV, true>(S, d, j0, al0, k0, q + t * d, al0 + d, k0 + d, kS, out, next);
    else
      writePass<NV, false>(S, d, j0, al0, k0, q + t * d, nullptr, nullptr, kS, out, next);
    for (int u = 0; u < NV; ++u) _mm256_storeu_ps(o + t * stride + j0 + 8 * u, out[u]);
    for (int u = 0; u < NV; ++u) kS[u] = next[u];
  }
}

// The same for one column (the d % 8 tail), with the same FMA roundings.
inline void deltaColumn(float* S, size_t d, size_t j, const float* alpha, const float* k, const float* q,
                        const float* v, float beta, float* o) {
  float kS = 0.0f;
  for (size_t a = 0; a < d; ++a) {
    float& s = S[a * d + j];
    s *= alpha[a];
    kS = std::fma(k[a], s, kS);
  }
  const float delta = beta * (v[j] - kS);
  float acc = 0.0f;
  for (size_t a = 0; a < d; ++a) {
    float& s = S[a * d + j];
    s = std::fma(k[a], delta, s);
    acc = std::fma(q[a], s, acc);
  }
  o[j] = acc;
}

}  // namespace

void shortConvSilu(float* win, const float* taps, float* x, size_t channels, size_t K) {
  if (K != 4) {  // only K3's kernel width has a vector path
    scalar::shortConvSilu(win, taps, x, channels, K);
    return;
  }
  const __m256i toSlots = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i fromSlots = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t c = 0;
  for (; c + 8 <= channels; c += 8) {
    __m256 w[4], t[4];
    windowsToSlots(win + c * 4, w);
    windowsToSlots(taps + c * 4, t);
    w[0] = w[1];
    w[1] = w[2];
    w[2] = w[3];
    w[3] = _mm256_permutevar8x32_ps(_mm256_loadu_ps(x + c), toSlots);
    slotsToWindows(w, win + c * 4);
    __m256 acc = _mm256_mul_ps(t[0], w[0]);  // taps in order 0..3, as the scalar sum
    acc = _mm256_fmadd_ps(t[1], w[1], acc);
    acc = _mm256_fmadd_ps(t[2], w[2], acc);
    acc = _mm256_fmadd_ps(t[3], w[3], acc);
    _mm256_storeu_ps(x + c, _mm256_permutevar8x32_ps(silu8(acc), fromSlots));
  }
  if (c < channels) {  // tail channels: same sums, SiLU through a masked vector
    float acc[8] = {};
    for (size_t i = 0; c + i < channels; ++i) {
      float* ww = win + (c + i) * 4;
      const float* tap = taps + (c + i) * 4;
      ww[0] = ww[1];
      ww[1] = ww[2];
      ww[2] = ww[3];
      ww[3] = x[c + i];
      acc[i] = std::fma(tap[3], ww[3], std::fma(tap[2], ww[2], std::fma(tap[1], ww[1], tap[0] * ww[0])));
    }
    const __m256i m = tailMask(channels - c);
    _mm256_maskstore_ps(x + c, m, silu8(_mm256_loadu_ps(acc)));
  }
}

void normalizeQk(const float* q, const float* k, size_t d, float* qn, float* kn) {
  const float qScale = 1.0f / std::sqrt(static_cast<float>(d));
  const float qInv = 1.0f / std::sqrt(dot(q, q, d) + 1e-6f), kInv = 1.0f / std::sqrt(dot(k, k, d) + 1e-6f);
  const __m256 vq = _mm256_set1_ps(qInv), vs = _mm256_set1_ps(qScale), vk = _mm256_set1_ps(kInv);
  size_t j = 0;
  for (; j + 8 <= d; j += 8) {
    _mm256_storeu_ps(qn + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(q + j), vq), vs));
    _mm256_storeu_ps(kn + j, _mm256_mul_ps(_mm256_loadu_ps(k + j), vk));
  }
  for (; j < d; ++j) {
    qn[j] = q[j] * qInv * qScale;
    kn[j] = k[j] * kInv;
  }
}

void decay(const float* f, const float* dtBias, float aExp, float gMin, size_t d, float* alpha) {
  const __m256 va = _mm256_set1_ps(aExp), vg = _mm256_set1_ps(gMin);
  auto one = [&](__m256 fv, __m256 bv) {
    return exp8(_mm256_mul_ps(vg, sigmoid8(_mm256_mul_ps(va, _mm256_add_ps(fv, bv)))));
  };
  size_t j = 0;
  for (; j + 8 <= d; j += 8) _mm256_storeu_ps(alpha + j, one(_mm256_loadu_ps(f + j), _mm256_loadu_ps(dtBias + j)));
  if (j < d) {
    const __m256i m = tailMask(d - j);
    _mm256_maskstore_ps(alpha + j, m, one(_mm256_maskload_ps(f + j, m), _mm256_maskload_ps(dtBias + j, m)));
  }
}

void deltaRule(float* S, size_t d, const float* alpha, const float* k, const float* q, const float* v, float beta,
               float* o) {
  deltaRuleTokens(S, d, 1, alpha, k, q, v, 0, &beta, o);
}

void deltaRuleTokens(float* S, size_t d, size_t n, const float* alpha, const float* k, const float* q,
                     const float* v, size_t stride, const float* beta, float* o) {
  size_t j = 0;
  for (; j + 32 <= d; j += 32) deltaColumns<4>(S, d, j, n, alpha, k, q, v, stride, beta, o);
  for (; j + 8 <= d; j += 8) deltaColumns<1>(S, d, j, n, alpha, k, q, v, stride, beta, o);
  for (; j < d; ++j)
    for (size_t t = 0; t < n; ++t)
      deltaColumn(S, d, j, alpha + t * d, k + t * d, q + t * d, v + t * stride, beta[t], o + t * stride);
}

}  // namespace k3::kernels::avx2
