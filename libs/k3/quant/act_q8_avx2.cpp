// AVX2 IDOT kernel: MXFP4 weights x int8 activations. Per 32-group the exact
// integer dot comes from maddubs(|w2|, sign(xq, w2)) (|w2| <= 12, |xq| <= 127:
// pair sums fit int16), then one FMA by 2^(s-127)*0.5*xs into two alternating
// f32 accumulators (even and odd groups).
#include <immintrin.h>

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx2 {

namespace {

constexpr int kVecGroup = 4;

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
    __m256 acc[NV][2];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * cols;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    const __m256i lut = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                         0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    const __m256i nibMask = _mm256_set1_epi16(0x0f0f), ones = _mm256_set1_epi16(1);
    for (size_t g = 0; g < groups; ++g) {
      __m256i w16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)));
      __m256i nib = _mm256_and_si256(_mm256_or_si256(w16, _mm256_slli_epi16(w16, 4)), nibMask);
      __m256i w2 = _mm256_shuffle_epi8(lut, nib);  // doubled e2m1, column order
      __m256i aw = _mm256_abs_epi8(w2);
      const float sw = ue8m0ToF32(s[g]) * 0.5f;
      for (int j = 0; j < NV; ++j) {
        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + 32 * g));
        __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w2)), ones);
        __m256 c = _mm256_set1_ps(sw * xs[j][g]);
        acc[j][g & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), c, acc[j][g & 1]);
      }
    }
    for (int j = 0; j < NV; ++j) {
      __m256 t = _mm256_add_ps(acc[j][0], acc[j][1]);
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
