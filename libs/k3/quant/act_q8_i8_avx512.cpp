// AVX-512 VNNI IDOT kernel: int8-row weights x int8 activations, two 32-groups
// (64 bytes) per step. vpdpbusd multiplies |q| (u8) by the activation with the
// weight's sign folded in (masked negate; |xq| <= 127 so it cannot overflow),
// giving the exact integer dot of group g in lanes 0-7 and of group g+1 in
// lanes 8-15; one FMA applies the per-lane xs. The row scale multiplies the
// finished sum. Same loop shape as the MXFP4 kernel (act_q8_avx512.cpp).
#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"

namespace k3::quant::avx512 {

namespace {

constexpr int kI8VecGroup = 4;
constexpr size_t kXsChunk = 16;  // groups whose xs sit in one zmm

struct I8Q8Rows {
  const int8_t* Xq;
  const float* Xs;
  size_t cols;
  const int8_t* data;
  const float* scales;

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    const size_t groups = cols / kQ8Group;
    const int8_t* xq[NV];
    const float* xs[NV];
    __m512 acc[NV][2];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * cols;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    }
    const int8_t* p = data + r * cols;
    const __m512i zero = _mm512_setzero_si512();
    for (size_t g0 = 0; g0 < groups; g0 += kXsChunk) {
      const size_t ng = groups - g0 < kXsChunk ? groups - g0 : kXsChunk;
      const __mmask16 m = __mmask16((1u << ng) - 1);
      __m512 c[NV];
      for (int j = 0; j < NV; ++j) c[j] = _mm512_maskz_loadu_ps(m, xs[j] + g0);
      __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      const __m512i two = _mm512_set1_epi32(2);
      // Groups g, g+1 (or g alone: upper half zero) into accumulator a; `a`
      // is a constant after inlining (a run-time index spills the accumulators).
      auto pair = [&](size_t g, __mmask64 bytes, int a) {
        const __m512i w = _mm512_maskz_loadu_epi8(bytes, p + kQ8Group * g);
        const __m512i mag = _mm512_abs_epi8(w);
        const __mmask64 neg = _mm512_movepi8_mask(w);
        for (int j = 0; j < NV; ++j) {
          __m512i x = _mm512_maskz_loadu_epi8(bytes, xq[j] + kQ8Group * g);
          __m512i d = _mm512_dpbusd_epi32(zero, mag, _mm512_mask_sub_epi8(x, neg, zero, x));
          acc[j][a] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(idx, c[j]), acc[j][a]);
        }
        idx = _mm512_add_epi32(idx, two);
      };
      const __mmask64 all = ~__mmask64(0), low = 0xffffffffull;
      size_t q = 0;
      for (; q + 4 <= ng; q += 4) {
        pair(g0 + q, all, 0);
        pair(g0 + q + 2, all, 1);
      }
      if (q + 2 <= ng) {
        pair(g0 + q, all, 0);
        q += 2;
      }
      if (q < ng) pair(g0 + q, low, 1);  // odd group count: last group alone
    }
    const float s = scales[r];
    for (int j = 0; j < NV; ++j) out[j] = s * _mm512_reduce_add_ps(_mm512_add_ps(acc[j][0], acc[j][1]));
  }
};

}  // namespace

void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1) {
  I8Q8Rows k{Xq, Xs, w.cols, static_cast<const int8_t*>(w.data), static_cast<const float*>(w.scales)};
  runBlocked<kI8VecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
