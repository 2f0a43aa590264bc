// Internal: the dword transposes of the AVX-512 VNNI IDOT kernels, which put
// the products of one 32-group in each int32 lane: loadTransposed4 (a
// 4 x 4 transpose inside each 128-bit lane: the weights of both kernels and
// the int8-row activations) and GroupTranspose (16 x 8: the MXFP4
// activations). GroupTranspose leaves its sixteen groups in the order
// loadTransposed4 gives sixteen 16-byte groups (the MXFP4 weights): lane
// 4q + m = group 4m + q (kLaneGroup). transposeReduce16 is the 16 x 16
// transpose that combines as it goes (the drivers' row sums, the
// quantiser's group maxima).
// Internal linkage: included by ISA-specific TUs (see matmul_driver.h).
// Inline code without shared state: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/kernels/avx512_intrinsics.h"

namespace k3::kernels::avx512 {
namespace {

// 64 bytes at p of which the first `have` are there (all from 64 up); the
// rest read as zero and are not touched.
inline __m512i loadUpTo64(const void* p, size_t have) {
  return have >= 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8((__mmask64(1) << have) - 1, p);
}

// 256 bytes at p, of which the first `bytes` are there (loadUpTo64), as four
// vectors s0..s3, then transposed inside each 128-bit lane: lane 4q + m of
// out[k] = dword k of 128-bit lane q of s_m.
inline void loadTransposed4(const void* p, size_t bytes, __m512i (&out)[4]) {
  const auto* b = static_cast<const int8_t*>(p);
  __m512i s[4];
  for (size_t m = 0; m < 4; ++m) s[m] = loadUpTo64(b + 64 * m, bytes > 64 * m ? bytes - 64 * m : 0);
  const __m512i t0 = _mm512_unpacklo_epi32(s[0], s[1]), t1 = _mm512_unpackhi_epi32(s[0], s[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(s[2], s[3]), t3 = _mm512_unpackhi_epi32(s[2], s[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// [op-reduce of a[0]'s 16 lanes, ..., of a[15]'s]: a 16 x 16 transpose in
// which every level combines the lanes it brings together, (i, i+8), then
// (i, i+4), (i, i+2), (0, 1) of each row (the order rowSum16 in
// matmul_driver_avx512.h adds one row's lanes in, so sums agree bit for
// bit). op(x, y) combines two vectors lane-wise: add for the matmul
// drivers' row sums, max for the activation quantiser's group maxima.
template <class Op>
inline __m512 transposeReduce16(const __m512* a, Op op) {
  __m512 b[8], c[4], d[2];
  for (int k = 0; k < 8; ++k)  // b[k] = [row 2k: 8 lanes | row 2k+1: 8 lanes]
    b[k] = op(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44), _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xEE));
  for (int k = 0; k < 4; ++k)  // c[k] = rows 4k..4k+3, one 128-bit lane each
    c[k] = op(_mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0x88), _mm512_shuffle_f32x4(b[2 * k], b[2 * k + 1], 0xDD));
  for (int k = 0; k < 2; ++k)  // d[k] lane l: [row 8k+l, row 8k+4+l, then the second of both]
    d[k] = op(_mm512_unpacklo_ps(c[2 * k], c[2 * k + 1]), _mm512_unpackhi_ps(c[2 * k], c[2 * k + 1]));
  // lane l: [rows l, 8+l, 4+l, 12+l], then into row order.
  const __m512 e = op(_mm512_unpacklo_ps(d[0], d[1]), _mm512_unpackhi_ps(d[0], d[1]));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15), e);
}

// The group in lane l of sixteen: 4 (l % 4) + l / 4.
constexpr int laneGroup(int l) { return 4 * (l % 4) + l / 4; }

// kLaneGroup as dwords (for vpermd/vpermps of per-group values) and bytes
// (for a pshufb of 16 per-group bytes).
struct LaneGroupIndex {
  alignas(64) int32_t dwords[16];
  alignas(16) int8_t bytes[16];
  constexpr LaneGroupIndex() : dwords{}, bytes{} {
    for (int l = 0; l < 16; ++l) dwords[l] = bytes[l] = static_cast<int8_t>(laneGroup(l));
  }
};
inline constexpr LaneGroupIndex kLaneGroup{};

// GroupTranspose: input eight vectors, vector m holding groups 2m (dwords
// 0-7) and 2m+1 (dwords 8-15); output: vector d holds dword d of the sixteen
// groups in kLaneGroup order. 24 two-source dword permutes in three levels:
// 2 groups x 8 dwords -> 4 x 4 (lane 4d + group) -> 8 x 2 (lane 8d + group)
// -> 16 x 1.
struct GroupTransposeIndex {
  alignas(64) int32_t l1[2][16], l2[2][16], l3[2][16];
  constexpr GroupTransposeIndex() : l1{}, l2{}, l3{} {
    for (int h = 0; h < 2; ++h)
      for (int l = 0; l < 16; ++l) {
        const int d1 = 4 * h + l / 4, g1 = l % 4;  // sources: 2 groups x 8 dwords
        l1[h][l] = (g1 < 2 ? 0 : 16) + 8 * (g1 % 2) + d1;
        const int d2 = 2 * h + l / 8, g2 = l % 8;  // sources: 4 groups x 4 dwords
        l2[h][l] = (g2 < 4 ? 0 : 16) + 4 * d2 + g2 % 4;
        const int g3 = laneGroup(l);  // sources: 8 groups x 2 dwords; out: kLaneGroup order
        l3[h][l] = (g3 < 8 ? 0 : 16) + 8 * h + g3 % 8;
      }
  }
};
inline constexpr GroupTransposeIndex kGroupTransposeIndex{};

class GroupTranspose {
 public:
  GroupTranspose()
      : i1_{_mm512_loadu_si512(kGroupTransposeIndex.l1[0]), _mm512_loadu_si512(kGroupTransposeIndex.l1[1])},
        i2_{_mm512_loadu_si512(kGroupTransposeIndex.l2[0]), _mm512_loadu_si512(kGroupTransposeIndex.l2[1])},
        i3_{_mm512_loadu_si512(kGroupTransposeIndex.l3[0]), _mm512_loadu_si512(kGroupTransposeIndex.l3[1])} {}

  void operator()(const __m512i (&in)[8], __m512i (&out)[8]) const {
    __m512i b[8], c[8];
    for (int p = 0; p < 4; ++p)  // b[2p + h]: groups 4p..4p+3, dwords 4h..4h+3
      for (int h = 0; h < 2; ++h) b[2 * p + h] = _mm512_permutex2var_epi32(in[2 * p], i1_[h], in[2 * p + 1]);
    for (int q = 0; q < 2; ++q)  // c[4q + 2h + e]: groups 8q..8q+7, dwords 4h+2e, 4h+2e+1
      for (int h = 0; h < 2; ++h)
        for (int e = 0; e < 2; ++e)
          c[4 * q + 2 * h + e] = _mm512_permutex2var_epi32(b[4 * q + h], i2_[e], b[4 * q + 2 + h]);
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e)
        for (int f = 0; f < 2; ++f)
          out[4 * h + 2 * e + f] = _mm512_permutex2var_epi32(c[2 * h + e], i3_[f], c[4 + 2 * h + e]);
  }

 private:
  __m512i i1_[2], i2_[2], i3_[2];
};

}  // namespace
}  // namespace k3::kernels::avx512
