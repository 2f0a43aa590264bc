// AVX-512 VNNI IDOT kernel: int8-row weights x int8 activations, eight
// 32-groups (256 bytes) per step.
//
// The step's weights load as four vectors S0..S3, each 128-bit lane holding
// four dwords of one group. A 4 x 4 dword transpose inside each 128-bit lane
// (eight unpacks) gives T0..T3 with the same group in a given lane of all
// four (lane 4q + m: group 2m + q/2, dwords 4(q%2) + k of Tk), so their
// products can be summed as integers before the one convert and FMA that
// apply xs. The activations are re-laid once per call by the same transpose.
// vpdpbusd takes its first operand unsigned, so the activations are used as
// xq + 128 and the weights stay signed: sum (xq+128)*q = sum xq*q + 128*sum q;
// the correction depends on the weights only (four vpdpbusd of 128s against
// T0..T3, shared by the vectors), and each vector's accumulation starts from
// its negation, leaving exact integer partial dots of q*xq (16 products a
// lane, |lane| <= 16*128*127, exact in f32). The driver sums the row's
// lanes and applies the row scale (matmul_driver_avx512.h). The same
// operations for every vector: matmul == matvec bit for bit.
//
// Per vector and 8 groups: four vpdpbusd, one convert and one FMA, and five
// loads, where two groups per step took a vpdpbusd, a convert and an FMA for
// every two groups (MatmulQ8Shape I8Row in the commit message). Rows go in
// pairs (rowPair) so each activation load feeds two rows: one row at a
// time, the five loads per vector and step, not the ALU, were the bound.
// Thread-safe: no shared mutable state.

#include <algorithm>

#include "k3/kernels/avx512_intrinsics.h"

#include "k3/kernels/act_q8.h"
#include "k3/kernels/group_transpose_avx512.h"
#include "k3/kernels/matmul_driver_avx512.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx512 {

namespace {

constexpr int kI8VecGroup = 8;
constexpr size_t kSetGroups = 8;
constexpr size_t kSetBytes = 4 * 64 + 64;  // per 8 groups and vector: 4 x 64 bytes of xq + 128, 16 xs
constexpr size_t kSetScaleOffset = 4 * 64;
// Re-laid activations up to this size live on the stack: 40 bytes per 32
// columns, so a decode step never allocates, even at K3's widest input
// (33792 columns: 41 KiB).
constexpr size_t kI8StackBytes = 64 << 10;

size_t setsOf(size_t groups) { return (groups + kSetGroups - 1) / kSetGroups; }

// One activation vector into the set layout (xq + 128 as u8 in the
// transposed order, then xs of each lane's group); missing groups are xq = 0
// and xs = 0.
void relayoutI8(const int8_t* x, const float* xs, size_t groups, int8_t* out) {
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const __m512i groupOfLane = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 1, 3, 5, 7, 1, 3, 5, 7);
  for (size_t s = 0; s < setsOf(groups); ++s) {
    const size_t ng = std::min(kSetGroups, groups - kSetGroups * s);
    int8_t* o = out + s * kSetBytes;
    __m512i a[4];
    loadTransposed4(x + kQ8Group * kSetGroups * s, kQ8Group * ng, a);  // lane 4q + m: group 2m + q/2
    for (int k = 0; k < 4; ++k) _mm512_storeu_si512(o + 64 * k, _mm512_xor_si512(a[k], flip));
    const __m512 s8 = _mm512_maskz_loadu_ps(__mmask16((1u << ng) - 1), xs + kSetGroups * s);
    _mm512_storeu_ps(reinterpret_cast<float*>(o + kSetScaleOffset), _mm512_permutexvar_ps(groupOfLane, s8));
  }
}

struct I8SetRows {
  const int8_t* X;  // re-laid activations, [n, stride] (set by runRelaid16)
  size_t stride;    // setsOf(groups) * kSetBytes
  size_t cols;
  const int8_t* data;   // q [rows, cols]
  const float* rowScales;  // [rows]: the driver multiplies each row's finished sum
  static constexpr bool kPacksRows = false;
  static constexpr bool kPairsRows = true;

  // Both prefetch non-temporally kStreamAhead ahead for any number of
  // vectors: from DRAM (continuous batching's decode, one row per
  // conversation; quant_bench MatmulQ8Stream I8Row, 2 threads) n = 2 went
  // 33 -> 48 GB/s and n = 4 29 -> 37 against the 2 KiB T0 prefetch, prefill
  // chunks from cache (MatmulQ8 I8Row 4 and 16) the same or faster.
  // Rows r and r + 1 at once: each activation load serves both (the loads,
  // not the vpdpbusd, bound one row at a time); each row's operations and
  // their order are row()'s, so its bits are too. Not for one vector: a
  // decode step's matvec streams from DRAM, and two rows at a time cut
  // that rate by a fifth (quant_bench MatvecQ8 I8Row, 16.3 -> 12.7 GB/s).
  template <int NV>
  void rowPair(size_t r, size_t v0, __m512* out0, __m512* out1) const {
    if constexpr (NV == 1) {  // one vector streams from DRAM: one row at a time is faster there
      row<1>(r, v0, out0);
      row<1>(r + 1, v0, out1);
    } else {
      const size_t groups = cols / kQ8Group, sets = setsOf(groups);
      const int8_t* p0 = data + r * cols;
      const int8_t* p1 = p0 + cols;
      __m512 acc0[NV], acc1[NV];
      for (int j = 0; j < NV; ++j) acc0[j] = acc1[j] = _mm512_setzero_ps();
      const __m512i c128 = _mm512_set1_epi8(char(0x80)), zero = _mm512_setzero_si512();
      for (size_t s = 0; s < sets; ++s) {
        const size_t ng = std::min(kSetGroups, groups - kSetGroups * s);
        __m512i w0[4], w1[4];
        // The pair reads two streams at once: each is prefetched half of
        // kStreamAhead ahead, past its row's end into the next pair's row
        // (p + kStreamAhead from row r lands in row r + 1, read already, and
        // left every second row of the next pair unfetched).
        const size_t ahead = kQ8Group * kSetGroups * s + kStreamAhead / 2;
        const size_t at = ahead < cols ? ahead : ahead + cols;  // past the end: the same offset two rows on
        for (int l = 0; l < 4; ++l) {
          __builtin_prefetch(p0 + at + 64 * l, 0, 0);
          __builtin_prefetch(p1 + at + 64 * l, 0, 0);
        }
        loadTransposed4(p0 + kQ8Group * kSetGroups * s, kQ8Group * ng, w0);
        loadTransposed4(p1 + kQ8Group * kSetGroups * s, kQ8Group * ng, w1);
        __m512i corr0 = _mm512_dpbusd_epi32(zero, c128, w0[0]), corr1 = _mm512_dpbusd_epi32(zero, c128, w1[0]);
        for (int k = 1; k < 4; ++k) {
          corr0 = _mm512_dpbusd_epi32(corr0, c128, w0[k]);
          corr1 = _mm512_dpbusd_epi32(corr1, c128, w1[k]);
        }
        corr0 = _mm512_sub_epi32(zero, corr0);
        corr1 = _mm512_sub_epi32(zero, corr1);
        for (int j = 0; j < NV; ++j) {
          const int8_t* a = X + (v0 + j) * stride + s * kSetBytes;
          __m512i d0 = corr0, d1 = corr1;
          for (int k = 0; k < 4; ++k) {
            const __m512i x = _mm512_loadu_si512(a + 64 * k);
            d0 = _mm512_dpbusd_epi32(d0, x, w0[k]);
            d1 = _mm512_dpbusd_epi32(d1, x, w1[k]);
          }
          const __m512 xs = _mm512_loadu_ps(reinterpret_cast<const float*>(a + kSetScaleOffset));
          acc0[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), xs, acc0[j]);
          acc1[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), xs, acc1[j]);
        }
      }
      for (int j = 0; j < NV; ++j) out0[j] = acc0[j], out1[j] = acc1[j];
    }
  }

  template <int NV>
  void row(size_t r, size_t v0, __m512* out) const {
    const size_t groups = cols / kQ8Group, sets = setsOf(groups);
    const int8_t* p = data + r * cols;
    __m512 acc[NV];
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_setzero_ps();
    const __m512i c128 = _mm512_set1_epi8(char(0x80)), zero = _mm512_setzero_si512();
    for (size_t s = 0; s < sets; ++s) {
      const size_t ng = std::min(kSetGroups, groups - kSetGroups * s);
      __m512i w[4];
      // Non-temporal, kStreamAhead (8 KiB) ahead. One vector (decode) with
      // the hardware prefetcher alone reached 0.55-0.7 of a plain read's
      // bandwidth on Zen 5, with this 0.8-0.95 (MatvecQ8 I8Row, 2 threads:
      // 37.5 -> 55-58 GB/s beside StreamRead 64-71; a T0 prefetch 2 KiB
      // ahead had cost it more than half on Zen 4).
      for (int l = 0; l < 4; ++l) prefetchStream(p + kQ8Group * kSetGroups * s + 64 * l);
      loadTransposed4(p + kQ8Group * kSetGroups * s, kQ8Group * ng, w);
      __m512i corr = _mm512_dpbusd_epi32(zero, c128, w[0]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[1]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[2]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[3]);
      corr = _mm512_sub_epi32(zero, corr);  // -128 * the lane's sum of q
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + s * kSetBytes;
        __m512i d = _mm512_dpbusd_epi32(corr, _mm512_loadu_si512(a), w[0]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(a + 64), w[1]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(a + 128), w[2]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(a + 192), w[3]);
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                 _mm512_loadu_ps(reinterpret_cast<const float*>(a + kSetScaleOffset)), acc[j]);
      }
    }
    for (int j = 0; j < NV; ++j) out[j] = acc[j];
  }
};

}  // namespace

void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1) {
  const I8SetRows k{nullptr, setsOf(w.cols / kQ8Group) * kSetBytes, w.cols, static_cast<const int8_t*>(w.data),
                    static_cast<const float*>(w.scales)};
  runRelaid16<kI8VecGroup, kI8StackBytes>(k, relayoutI8, Xq, Xs, n, r0, r1, w.rows, Y);
}

}  // namespace k3::kernels::avx512
