// Internal: the row kernel of both AVX-512 VNNI IDOT kernels (MXFP4 in
// act_q8_avx512.cpp, int8 rows in act_q8_i8_avx512.cpp), two 32-groups per
// step. vpdpbusd multiplies |w| (u8) by the activation with the weight's sign
// folded in (masked negate), giving the exact integer dot of group g in lanes
// 0-7 and of group g+1 in lanes 8-15; one FMA applies the per-lane factor.
// A format policy holds only what differs (decode, factors, row scale).
// Internal linkage: included by ISA-specific TUs (see matmul_driver.h).
#pragma once

#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/matmul_driver.h"

namespace k3::quant::avx512 {
namespace {

constexpr int kQ8VecGroup = 4;
constexpr size_t kFactorChunk = 16;  // groups whose factors sit in one zmm

struct Q8Weights {
  __m512i mag;   // |w| as u8
  __mmask64 neg;  // lanes where w < 0
};

// Format::row(r, cols) gives row r's decoder R with
//   Q8Weights R::pair(size_t g, bool alone): groups g, g+1 (alone: g, upper half zero);
//   template <int NV> void R::scale(size_t g0, __mmask16 m, __m512 (&c)[NV]):
//     c[j] holds xs of groups g0.. (masked lanes 0); times the weight factor;
//   float R::finish(float sum): the row's result from the summed accumulators.
template <class Format>
struct Q8Rows {
  const int8_t* Xq;
  const float* Xs;
  size_t cols;
  Format fmt;

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
    const auto w = fmt.row(r, cols);
    const __m512i zero = _mm512_setzero_si512();
    for (size_t g0 = 0; g0 < groups; g0 += kFactorChunk) {
      const size_t ng = groups - g0 < kFactorChunk ? groups - g0 : kFactorChunk;
      const __mmask16 m = __mmask16((1u << ng) - 1);
      __m512 c[NV];
      for (int j = 0; j < NV; ++j) c[j] = _mm512_maskz_loadu_ps(m, xs[j] + g0);
      w.scale(g0, m, c);
      __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
      const __m512i two = _mm512_set1_epi32(2);
      // Groups g, g+1 (or g alone) into accumulator a; `a` is a constant after
      // inlining (a run-time index spills the accumulators).
      auto pair = [&](size_t g, bool alone, int a) {
        const Q8Weights wg = w.pair(g, alone);
        for (int j = 0; j < NV; ++j) {
          __m512i x = _mm512_maskz_loadu_epi8(alone ? 0xffffffffull : ~0ull, xq[j] + kQ8Group * g);
          __m512i d = _mm512_dpbusd_epi32(zero, wg.mag, _mm512_mask_sub_epi8(x, wg.neg, zero, x));
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
    for (int j = 0; j < NV; ++j) out[j] = w.finish(_mm512_reduce_add_ps(_mm512_add_ps(acc[j][0], acc[j][1])));
  }
};

}  // namespace
}  // namespace k3::quant::avx512
