// AVX-512 VNNI IDOT kernel: MXFP4 weights x int8 activations, sixteen
// 32-groups per step with one group per int32 lane.
//
// A row's packed bytes for groups c..c+15 (256 bytes, four loads) are
// transposed inside each 128-bit lane (eight unpacks, loadTransposed4) so
// that vector k holds packed dword k (columns 8k..8k+7) of every group, one
// group per lane (lane 4q + m: group 4m + q); its low nibbles (columns
// 8k+0,2,4,6) and high nibbles (8k+1,3,5,7) go through a byte table to
// u = doubled e2m1 + 12 (u8, [0, 24]), as vpdpbusd's unsigned operand needs.
// The activations are copied once per call into the matching order (per
// chunk of 16 groups: the eight byte vectors, then -12 * the group's sum of
// xq, then xs), so per vector and chunk eight vpdpbusd, started from
// -12*sum, leave the exact integer dot of doubled e2m1 x xq of each group in
// its lane, and one convert, one multiply and one FMA apply the sixteen
// factors 2^(s-127)*0.5*xs at once. The driver sums the row's lanes
// (matmul_driver_avx512.h). The same operations for every vector: matmul ==
// matvec bit for bit.
//
// Against two groups per step (|w| and a masked negate of xq per vector, then
// a convert, a permute and an FMA for every two groups) this does a quarter
// of the per-vector work (quant_bench MatmulQ8Shape, in the commit message).

#include <algorithm>

#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/group_transpose_avx512.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver_avx512.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx512 {

namespace {

constexpr int kG16VecGroup = 8;
constexpr size_t kChunkGroups = 16;
// Per chunk and vector: 8 x 64 activation bytes, 16 int32 corrections, 16 xs.
constexpr size_t kChunkBytes = 8 * 64 + 64 + 64;
constexpr size_t kCorrOffset = 8 * 64, kScaleOffset = 8 * 64 + 64;
constexpr size_t kG16StackBytes = 32 << 10;  // re-laid activations up to this size live on the stack
constexpr int kOffset = 12;                   // table = doubled e2m1 + 12

size_t chunksOf(size_t groups) { return (groups + kChunkGroups - 1) / kChunkGroups; }

// One activation vector into the chunk layout above; lanes past the last
// group are zero (activations, correction and xs), so they add exact zeros.
// Per 16 groups: one in-lane byte shuffle puts each group's 8 dwords in the
// order [lo0 lo1 hi0 hi1 lo2 lo3 hi2 hi3] (lo k = columns 8k+0,2,4,6), a
// 16 x 8 dword transpose (24 permutes) makes one vector per dword with a
// group per lane (kLaneGroup order), and vpdpbusd against 12s gives the
// corrections.
void relayout(const int8_t* x, const float* xs, size_t groups, int8_t* out) {
  const GroupTranspose transpose;
  const __m512i split = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  const __m512i twelve = _mm512_set1_epi8(kOffset);
  const __m512i laneGroup = _mm512_loadu_si512(kLaneGroup.dwords);
  constexpr int kVectorOf[8] = {0, 1, 4, 5, 2, 3, 6, 7};  // dword d of a group -> vector index
  for (size_t c = 0; c < chunksOf(groups); ++c) {
    const size_t ng = std::min(kChunkGroups, groups - kChunkGroups * c);
    const int8_t* src = x + 32 * kChunkGroups * c;
    int8_t* o = out + c * kChunkBytes;
    __m512i R[8], A[8];
    for (size_t m = 0; m < 8; ++m)
      R[m] = _mm512_shuffle_epi8(loadUpTo64(src + 64 * m, 32 * ng > 64 * m ? 32 * ng - 64 * m : 0), split);
    transpose(R, A);
    __m512i sum = _mm512_setzero_si512();
    for (int d = 0; d < 8; ++d) {
      _mm512_storeu_si512(o + 64 * kVectorOf[d], A[d]);
      sum = _mm512_dpbusd_epi32(sum, twelve, A[d]);
    }
    _mm512_storeu_si512(o + kCorrOffset, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
    _mm512_storeu_ps(reinterpret_cast<float*>(o + kScaleOffset),
                     _mm512_permutexvar_ps(laneGroup, _mm512_maskz_loadu_ps(__mmask16((1u << ng) - 1), xs + kChunkGroups * c)));
  }
}

struct Mxfp4G16Rows {
  const int8_t* X;  // re-laid activations, [n, stride] (set by runRelaid16)
  size_t stride;    // chunksOf(groups) * kChunkBytes
  size_t cols;
  const uint8_t* data;    // packed e2m1 [rows, cols / 2]
  const uint8_t* scales;  // ue8m0 [rows, groups]
  const float* rowScales = nullptr;  // none: the factors are per group

  template <int NV>
  void row(size_t r, size_t v0, __m512* out) const {
    const size_t groups = cols / kMxfp4Group, chunks = chunksOf(groups);
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    __m512 acc[NV];
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_setzero_ps();
    const __m512i lut = _mm512_broadcast_i32x4(
        _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
    const __m512i nib = _mm512_set1_epi8(0x0f);
    const __m128i scaleOrder = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLaneGroup.bytes));
    for (size_t c = 0; c < chunks; ++c) {
      const size_t ng = std::min(kChunkGroups, groups - kChunkGroups * c);
      const uint8_t* pc = p + 16 * kChunkGroups * c;
      // Batches prefetch 2 KiB ahead: an expert's matrix streams from DRAM
      // once per chunk while several vectors' work hides the latency. One
      // vector (decode) does not: there the hardware prefetcher alone is
      // faster on this Zen 4 host (MatvecQ8 MXFP4 from DRAM, 1 thread: 20
      // GB/s without, 12 with).
      if constexpr (NV > 1)
        for (int l = 0; l < 4; ++l) __builtin_prefetch(pc + kPrefetchAhead + 64 * l);
      // T[k] = packed dword k of the sixteen groups, in kLaneGroup order.
      __m512i T[4];
      loadTransposed4(pc, 16 * ng, T);
      __m512i W[8];
      for (int k = 0; k < 4; ++k) {
        W[k] = _mm512_shuffle_epi8(lut, _mm512_and_si512(T[k], nib));
        W[4 + k] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi32(T[k], 4), nib));
      }
      const __mmask16 lanes = __mmask16((1u << ng) - 1);
      const __m512 sw = _mm512_mul_ps(
          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_maskz_loadu_epi8(lanes, s + kChunkGroups * c), scaleOrder)), 23)),
          _mm512_set1_ps(0.5f));
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + c * kChunkBytes;
        __m512i d0 = _mm512_loadu_si512(a + kCorrOffset), d1 = _mm512_setzero_si512();
        d0 = _mm512_dpbusd_epi32(d0, W[0], _mm512_loadu_si512(a + 0 * 64));
        d1 = _mm512_dpbusd_epi32(d1, W[4], _mm512_loadu_si512(a + 4 * 64));
        d0 = _mm512_dpbusd_epi32(d0, W[1], _mm512_loadu_si512(a + 1 * 64));
        d1 = _mm512_dpbusd_epi32(d1, W[5], _mm512_loadu_si512(a + 5 * 64));
        d0 = _mm512_dpbusd_epi32(d0, W[2], _mm512_loadu_si512(a + 2 * 64));
        d1 = _mm512_dpbusd_epi32(d1, W[6], _mm512_loadu_si512(a + 6 * 64));
        d0 = _mm512_dpbusd_epi32(d0, W[3], _mm512_loadu_si512(a + 3 * 64));
        d1 = _mm512_dpbusd_epi32(d1, W[7], _mm512_loadu_si512(a + 7 * 64));
        const __m512 f = _mm512_mul_ps(sw, _mm512_loadu_ps(reinterpret_cast<const float*>(a + kScaleOffset)));
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1)), f, acc[j]);
      }
    }
    for (int j = 0; j < NV; ++j) out[j] = acc[j];
  }
};

}  // namespace

void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  const Mxfp4G16Rows k{nullptr, chunksOf(w.cols / kQ8Group) * kChunkBytes, w.cols,
                       static_cast<const uint8_t*>(w.data), static_cast<const uint8_t*>(w.scales)};
  runRelaid16<kG16VecGroup, kG16StackBytes>(k, relayout, Xq, Xs, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
