// AVX-512 VNNI IDOT kernel: MXFP4 weights x int8 activations, two 32-groups
// (32 packed bytes) per step. vpdpbusd multiplies |doubled e2m1| (u8, <= 12)
// by the activation with the weight's sign folded in (masked negate), giving
// the exact integer dot of group g in lanes 0-7 and of group g+1 in lanes 8-15;
// one FMA then applies the per-lane factor 2^(s-127)*0.5*xs.
#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx512 {

namespace {

constexpr int kQ8VecGroup = 4;
constexpr size_t kScaleChunk = 16;  // groups whose factors sit in one zmm

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
    __m512 acc[NV][2];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * cols;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    const __m512i lutMag = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12));
    const __m512i nibMask = _mm512_set1_epi16(0x0f0f), signBit = _mm512_set1_epi8(8);
    const __m512i zero = _mm512_setzero_si512();
    for (size_t g0 = 0; g0 < groups; g0 += kScaleChunk) {
      const size_t ng = groups - g0 < kScaleChunk ? groups - g0 : kScaleChunk;
      const __mmask16 m = __mmask16((1u << ng) - 1);
      // Factor per group, lanes past ng are 0 * 0.
      __m512 sw = _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, s + g0)), 23));
      sw = _mm512_mul_ps(sw, _mm512_set1_ps(0.5f));
      __m512 c[NV];
      for (int j = 0; j < NV; ++j) c[j] = _mm512_mul_ps(sw, _mm512_maskz_loadu_ps(m, xs[j] + g0));
      __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      const __m512i two = _mm512_set1_epi32(2);
      // Groups g, g+1 (or g alone: upper half zero) into accumulator a; `a`
      // is a constant after inlining (a run-time index spills the accumulators).
      auto pair = [&](size_t g, bool alone, int a) {
        const __m256i bytes =
            alone ? _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)))
                  : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 * g));
        __m512i w16 = _mm512_cvtepu8_epi16(bytes);
        __m512i nib = _mm512_and_si512(_mm512_or_si512(w16, _mm512_slli_epi16(w16, 4)), nibMask);
        __m512i mag = _mm512_shuffle_epi8(lutMag, nib);
        __mmask64 neg = _mm512_test_epi8_mask(nib, signBit);
        for (int j = 0; j < NV; ++j) {
          __m512i x = _mm512_maskz_loadu_epi8(alone ? 0xffffffffull : ~0ull, xq[j] + 32 * g);
          __m512i d = _mm512_dpbusd_epi32(zero, mag, _mm512_mask_sub_epi8(x, neg, zero, x));
          acc[j][a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, c[j]), acc[j][a]);
        }
        idx = _mm512_add_epi32(idx, two);
      };
      size_t q = 0;
      for (; q + 4 <= ng; q += 4) {
        pair(g0 + q, false, 0);
        pair(g0 + q + 2, false, 1);
      }
      if (q + 2 <= ng) {
        pair(g0 + q, false, 0);
        q += 2;
      }
      if (q < ng) pair(g0 + q, true, 1);  // odd group count: last group alone
    }
    for (int j = 0; j < NV; ++j) out[j] = _mm512_reduce_add_ps(_mm512_add_ps(acc[j][0], acc[j][1]));
  }
};

}  // namespace

void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  Q8Rows k{Xq, Xs, w.cols, static_cast<const uint8_t*>(w.data),
           static_cast<const uint8_t*>(w.scales)};
  runBlocked<kQ8VecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
