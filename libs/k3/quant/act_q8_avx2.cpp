// AVX2 IDOT kernel: MXFP4 weights x int8 activations.
// Two 32-groups (32 packed bytes) are decoded together: nibbles split and
// interleaved back into column order, a byte table gives the doubled e2m1
// value w2, and maddubs(|w2|, sign(xq, w2)) gives exact int16 pair sums
// (|w2| <= 12, |xq| <= 127). Four groups' partials are folded by two int16
// hadds (still exact: at most 8 products) and one madd into a single vector
// [g0 g1 g2 g3 | g0 g1 g2 g3], so one convert + FMA applies the four factors
// 2^(s-127)*0.5*xs. Leftover groups
// (count % 4) take the one-group path into a second accumulator.
#include <immintrin.h>

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx2 {

namespace {

constexpr int kVecGroup = 2;  // 16 ymm: the decode of 4 groups plus 2 vectors

inline __m256i doubledLut() {
  return _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                          0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

// 32 packed bytes (groups g, g+1) -> doubled e2m1 values of each group, column order.
inline void decodePair(const uint8_t* p, __m256i lut, __m256i& w0, __m256i& w1) {
  const __m256i m = _mm256_set1_epi8(0x0f);
  __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  __m256i lo = _mm256_and_si256(b, m), hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), m);
  __m256i a = _mm256_unpacklo_epi8(lo, hi);  // [g cols 0-15  | g+1 cols 0-15]
  __m256i c = _mm256_unpackhi_epi8(lo, hi);  // [g cols 16-31 | g+1 cols 16-31]
  w0 = _mm256_shuffle_epi8(lut, _mm256_permute2x128_si256(a, c, 0x20));
  w1 = _mm256_shuffle_epi8(lut, _mm256_permute2x128_si256(a, c, 0x31));
}

// 16 packed bytes (one group) -> doubled values, column order.
inline __m256i decodeOne(const uint8_t* p, __m256i lut) {
  __m256i w16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  __m256i nib = _mm256_and_si256(_mm256_or_si256(w16, _mm256_slli_epi16(w16, 4)),
                                 _mm256_set1_epi16(0x0f0f));
  return _mm256_shuffle_epi8(lut, nib);
}

// Exact products of one group summed in pairs: 16 int16 lanes.
inline __m256i groupPairs(__m256i absW, __m256i w, const int8_t* x) {
  __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  return _mm256_maddubs_epi16(absW, _mm256_sign_epi8(xv, w));
}
// ... and in fours: 8 int32 lanes.
inline __m256i groupDot(__m256i absW, __m256i w, const int8_t* x) {
  return _mm256_madd_epi16(groupPairs(absW, w, x), _mm256_set1_epi16(1));
}

struct Q8Rows {
  const int8_t* Xq;
  const float* Xs;
  size_t cols;
  const uint8_t* data;
  const uint8_t* scales;

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    const size_t groups = cols / kMxfp4Group;
    const int8_t* xq[NV];
    const float* xs[NV];
    __m256 acc[NV], accTail[NV];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * cols;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j] = accTail[j] = _mm256_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    const __m256i lut = doubledLut();
    size_t g = 0;
    for (; g + 4 <= groups; g += 4) {
      __m256i w[4], a[4];
      decodePair(p + 16 * g, lut, w[0], w[1]);
      decodePair(p + 16 * g + 32, lut, w[2], w[3]);
      for (int k = 0; k < 4; ++k) a[k] = _mm256_abs_epi8(w[k]);
      // 2^(s-127) * 0.5 for the four groups (s placed in the exponent field).
      int32_t s4;
      __builtin_memcpy(&s4, s + g, 4);
      __m128 sw = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(s4)), 23));
      sw = _mm_mul_ps(sw, _mm_set1_ps(0.5f));
      for (int j = 0; j < NV; ++j) {
        const int8_t* x = xq[j] + 32 * g;
        // int16 partials: <= 3048 per maddubs lane, <= 12192 after two hadds.
        __m256i h01 = _mm256_hadd_epi16(groupPairs(a[0], w[0], x), groupPairs(a[1], w[1], x + 32));
        __m256i h23 = _mm256_hadd_epi16(groupPairs(a[2], w[2], x + 64), groupPairs(a[3], w[3], x + 96));
        __m256i d = _mm256_madd_epi16(_mm256_hadd_epi16(h01, h23), _mm256_set1_epi16(1));
        __m128 c = _mm_mul_ps(sw, _mm_loadu_ps(xs[j] + g));  // [g0..g3 | g0..g3] in d
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set_m128(c, c), acc[j]);
      }
    }
    for (; g < groups; ++g) {
      __m256i w = decodeOne(p + 16 * g, lut), a = _mm256_abs_epi8(w);
      const float sw = ue8m0ToF32(s[g]) * 0.5f;
      for (int j = 0; j < NV; ++j) {
        __m256 d = _mm256_cvtepi32_ps(groupDot(a, w, xq[j] + 32 * g));
        accTail[j] = _mm256_fmadd_ps(d, _mm256_set1_ps(sw * xs[j][g]), accTail[j]);
      }
    }
    for (int j = 0; j < NV; ++j) {
      __m256 t = _mm256_add_ps(acc[j], accTail[j]);
      __m128 q = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
      q = _mm_add_ps(q, _mm_movehl_ps(q, q));
      q = _mm_add_ss(q, _mm_movehdup_ps(q));
      out[j] = _mm_cvtss_f32(q);
    }
  }
};

}  // namespace

void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  Q8Rows k{Xq, Xs, w.cols, static_cast<const uint8_t*>(w.data),
           static_cast<const uint8_t*>(w.scales)};
  runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx2
