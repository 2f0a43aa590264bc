// AVX2 + FMA versions of the MLA attention loops (mla_kernels.h). Blocks of
// queries × positions (scores) or queries × latent columns (weighted latent)
// share each cache load; every element keeps one accumulator with a fixed
// order, whatever block it falls in.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

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

// The rows latentBlock sums: f32 cache rows, or int8 kv_b rows dequantized
// in registers (float(q)·scale, one rounding: dequantizeInt8Rows's bits).
struct F32Rows {
  const float* L;
  size_t kvr;
  __m256 load(size_t s, size_t i) const { return _mm256_loadu_ps(L + s * kvr + i); }
  __m256 loadTail(size_t s, size_t i, __m256i m) const { return _mm256_maskload_ps(L + s * kvr + i, m); }
};

struct I8Rows {
  const int8_t* W;
  const float* scales;
  size_t kvr;
  static __m256 dequant(__m128i q, float scale) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(scale));
  }
  __m256 load(size_t s, size_t i) const {
    return dequant(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(W + s * kvr + i)), scales[s]);
  }
  __m256 loadTail(size_t s, size_t i, __m256i) const {  // lanes past kvr are never stored
    int64_t q = 0;
    std::memcpy(&q, W + s * kvr + i, kvr - i);
    return dequant(_mm_cvtsi64_si128(q), scales[s]);
  }
};

// cl columns [i, i + 8·NU) of NQ queries: acc = fma(p_s, L_s, acc) for s in
// order, as a zero-initialised axpy per position would do.
template <int NQ, int NU, bool Masked, class Rows>
inline void latentBlock(const float* p, size_t pStride, const Rows& L, size_t len, size_t kvr, size_t i, float* cl,
                        size_t clStride) {
  const __m256i m = tailMask(Masked ? kvr - i : 8);
  __m256 acc[NQ][NU];
  for (int j = 0; j < NQ; ++j)
    for (int u = 0; u < NU; ++u) acc[j][u] = _mm256_setzero_ps();
  for (size_t s = 0; s < len; ++s) {
    __m256 l[NU];
    for (int u = 0; u < NU; ++u) l[u] = Masked ? L.loadTail(s, i, m) : L.load(s, i + 8 * u);
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

template <int NQ, class Rows>
inline void latentRows(const float* p, size_t pStride, const Rows& L, size_t len, size_t kvr, float* cl,
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

template <class Rows>
void weightedLatent(const float* p, size_t pStride, size_t nq, const Rows& L, size_t len, size_t kvr, float* cl,
                    size_t clStride) {
  size_t j = 0;
  for (; j + 4 <= nq; j += 4) latentRows<4>(p + j * pStride, pStride, L, len, kvr, cl + j * clStride, clStride);
  for (; j < nq; ++j) latentRows<1>(p + j * pStride, pStride, L, len, kvr, cl + j * clStride, clStride);
}

// NR dequantized rows · cl at once (independent chains), each exactly as
// ops_avx2.cpp's dot: four accumulators over 32-column steps, then 8-column
// steps into the first, the masked tail into the second, then the lane sum.
template <int NR>
inline void rowDots(const I8Rows& W, size_t r0, size_t kvr, const float* cl, float* out) {
  __m256 a[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int k = 0; k < 4; ++k) a[r][k] = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= kvr; i += 32)
    for (int k = 0; k < 4; ++k) {
      const __m256 c = _mm256_loadu_ps(cl + i + 8 * k);
      for (int r = 0; r < NR; ++r) a[r][k] = _mm256_fmadd_ps(W.load(r0 + r, i + 8 * k), c, a[r][k]);
    }
  for (; i + 8 <= kvr; i += 8) {
    const __m256 c = _mm256_loadu_ps(cl + i);
    for (int r = 0; r < NR; ++r) a[r][0] = _mm256_fmadd_ps(W.load(r0 + r, i), c, a[r][0]);
  }
  if (i < kvr) {
    const __m256i m = tailMask(kvr - i);
    const __m256 c = _mm256_maskload_ps(cl + i, m);
    // The dequantized lanes past kvr multiply masked-off (zero) cl lanes, as
    // dot's masked load of the row gives 0·0; both add exactly +0.
    for (int r = 0; r < NR; ++r)
      a[r][1] = _mm256_fmadd_ps(_mm256_and_ps(W.loadTail(r0 + r, i, m), _mm256_castsi256_ps(m)), c, a[r][1]);
  }
  for (int r = 0; r < NR; ++r)
    out[r0 + r] = hsum(_mm256_add_ps(_mm256_add_ps(a[r][0], a[r][1]), _mm256_add_ps(a[r][2], a[r][3])));
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
  weightedLatent(p, pStride, nq, F32Rows{L, kvr}, len, kvr, cl, clStride);
}

void mlaWeightedLatentI8(const float* p, size_t pStride, size_t nq, const int8_t* W, const float* scales, size_t len,
                         size_t kvr, float* cl, size_t clStride) {
  weightedLatent(p, pStride, nq, I8Rows{W, scales, kvr}, len, kvr, cl, clStride);
}

void mlaRowDotsI8(const int8_t* W, const float* scales, size_t rows, size_t kvr, const float* cl, float* out) {
  const I8Rows w{W, scales, kvr};
  size_t r = 0;
  for (; r + 2 <= rows; r += 2) rowDots<2>(w, r, kvr, cl, out);
  if (r < rows) rowDots<1>(w, r, kvr, cl, out);
}

}  // namespace k3::kernels::avx2
