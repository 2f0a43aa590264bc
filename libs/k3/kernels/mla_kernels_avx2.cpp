// AVX2 + FMA versions of the MLA attention loops (mla_kernels.h). Blocks of
// queries × positions (scores) or queries × latent columns (weighted latent)
// share each cache load; every element keeps one accumulator with a fixed
// order, whatever block it falls in.
#include <immintrin.h>

#include "k3/kernels/mla_kernels.h"
#include "k3/kernels/vector_math_avx2.h"

namespace k3::kernels::avx2 {

namespace {

// Scores of NQ queries × NS positions from s0. Each element: one 8-lane
// accumulator over the latent, then the rope part, then the lane sum.
template <int NQ, int NS>
inline void scoreBlock(const float* qa, size_t qaStride, const float* qr, size_t qrStride, const float* L,
                       const float* R, size_t s0, size_t kvr, size_t rope, float scale, float* scores,
                       size_t scoreStride) {
  __m256 acc[NQ][NS];
  for (int j = 0; j < NQ; ++j)
    for (int s = 0; s < NS; ++s) acc[j][s] = _mm256_setzero_ps();
  auto pass = [&](const float* q, size_t qStride, const float* X, size_t dim) {
    size_t i = 0;
    for (; i + 8 <= dim; i += 8) {
      __m256 x[NS];
      for (int s = 0; s < NS; ++s) x[s] = _mm256_loadu_ps(X + (s0 + s) * dim + i);
      for (int j = 0; j < NQ; ++j) {
        const __m256 qv = _mm256_loadu_ps(q + j * qStride + i);
        for (int s = 0; s < NS; ++s) acc[j][s] = _mm256_fmadd_ps(qv, x[s], acc[j][s]);
      }
    }
    if (i < dim) {  // masked-off lanes add exactly 0
      const __m256i m = tailMask(dim - i);
      __m256 x[NS];
      for (int s = 0; s < NS; ++s) x[s] = _mm256_maskload_ps(X + (s0 + s) * dim + i, m);
      for (int j = 0; j < NQ; ++j) {
        const __m256 qv = _mm256_maskload_ps(q + j * qStride + i, m);
        for (int s = 0; s < NS; ++s) acc[j][s] = _mm256_fmadd_ps(qv, x[s], acc[j][s]);
      }
    }
  };
  pass(qa, qaStride, L, kvr);
  pass(qr, qrStride, R, rope);
  for (int j = 0; j < NQ; ++j)
    for (int s = 0; s < NS; ++s) scores[j * scoreStride + s0 + s] = hsum(acc[j][s]) * scale;
}

template <int NQ>
inline void scoreRows(const float* qa, size_t qaStride, const float* qr, size_t qrStride, const float* L,
                      const float* R, size_t len, size_t kvr, size_t rope, float scale, float* scores,
                      size_t scoreStride) {
  size_t s = 0;
  for (; s + 2 <= len; s += 2)
    scoreBlock<NQ, 2>(qa, qaStride, qr, qrStride, L, R, s, kvr, rope, scale, scores, scoreStride);
  if (s < len) scoreBlock<NQ, 1>(qa, qaStride, qr, qrStride, L, R, s, kvr, rope, scale, scores, scoreStride);
}

// cl columns [i, i + 8·NU) of NQ queries: acc = fma(p_s, L_s, acc) for s in
// order, as a zero-initialised axpy per position would do.
template <int NQ, int NU, bool Masked>
inline void latentBlock(const float* p, size_t pStride, const float* L, size_t len, size_t kvr, size_t i,
                        float* cl, size_t clStride) {
  const __m256i m = tailMask(Masked ? kvr - i : 8);
  __m256 acc[NQ][NU];
  for (int j = 0; j < NQ; ++j)
    for (int u = 0; u < NU; ++u) acc[j][u] = _mm256_setzero_ps();
  for (size_t s = 0; s < len; ++s) {
    __m256 l[NU];
    for (int u = 0; u < NU; ++u)
      l[u] = Masked ? _mm256_maskload_ps(L + s * kvr + i, m) : _mm256_loadu_ps(L + s * kvr + i + 8 * u);
    for (int j = 0; j < NQ; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j * pStride + s]);
      for (int u = 0; u < NU; ++u) acc[j][u] = _mm256_fmadd_ps(pj, l[u], acc[j][u]);
    }
  }
  for (int j = 0; j < NQ; ++j)
    for (int u = 0; u < NU; ++u) {
      if (Masked)
        _mm256_maskstore_ps(cl + j * clStride + i, m, acc[j][u]);
      else
        _mm256_storeu_ps(cl + j * clStride + i + 8 * u, acc[j][u]);
    }
}

template <int NQ>
inline void latentRows(const float* p, size_t pStride, const float* L, size_t len, size_t kvr, float* cl,
                       size_t clStride) {
  size_t i = 0;
  // One query (a decode token's absorbed q_nope, len = the head's 128 key
  // rows): 8 accumulators, not 2, so the FMA chains over s overlap.
  if constexpr (NQ == 1)
    for (; i + 64 <= kvr; i += 64) latentBlock<1, 8, false>(p, pStride, L, len, kvr, i, cl, clStride);
  for (; i + 16 <= kvr; i += 16) latentBlock<NQ, 2, false>(p, pStride, L, len, kvr, i, cl, clStride);
  for (; i + 8 <= kvr; i += 8) latentBlock<NQ, 1, false>(p, pStride, L, len, kvr, i, cl, clStride);
  if (i < kvr) latentBlock<NQ, 1, true>(p, pStride, L, len, kvr, i, cl, clStride);
}

}  // namespace

void mlaScores(const float* qa, size_t qaStride, const float* qr, size_t qrStride, size_t nq, const float* L,
               const float* R, size_t len, size_t kvr, size_t rope, float scale, float* scores, size_t scoreStride) {
  size_t j = 0;
  for (; j + 4 <= nq; j += 4)
    scoreRows<4>(qa + j * qaStride, qaStride, qr + j * qrStride, qrStride, L, R, len, kvr, rope, scale,
                 scores + j * scoreStride, scoreStride);
  for (; j < nq; ++j)
    scoreRows<1>(qa + j * qaStride, qaStride, qr + j * qrStride, qrStride, L, R, len, kvr, rope, scale,
                 scores + j * scoreStride, scoreStride);
}

void mlaWeightedLatent(const float* p, size_t pStride, size_t nq, const float* L, size_t len, size_t kvr, float* cl,
                       size_t clStride) {
  size_t j = 0;
  for (; j + 4 <= nq; j += 4) latentRows<4>(p + j * pStride, pStride, L, len, kvr, cl + j * clStride, clStride);
  for (; j < nq; ++j) latentRows<1>(p + j * pStride, pStride, L, len, kvr, cl + j * clStride, clStride);
}

}  // namespace k3::kernels::avx2
