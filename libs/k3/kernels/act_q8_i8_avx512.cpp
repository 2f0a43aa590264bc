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
constexpr size_t kSetWeightBytes = kQ8Group * kSetGroups;  // a row's bytes per set
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
  static constexpr bool kBlocksColumns = true;
  static constexpr size_t kStepActivationBytes = kSetBytes;
  // A pair prefetches each of its two streams half of kStreamAhead ahead.
  static constexpr size_t kAheadSteps = kStreamAhead / 2 / (kQ8Group * kSetGroups);

  size_t steps() const { return setsOf(cols / kQ8Group); }

  // Rows r and r + 1 over sets [s0, s1), accumulating into acc0 / acc1:
  // each activation load serves both rows (the loads, not the vpdpbusd,
  // bound one row at a time); each row's operations and their order are
  // row()'s, so its bits are too. Both streams are prefetched
  // non-temporally where `ahead` says (matmul_driver_avx512.h: half of
  // kStreamAhead on in the order the pairs read): from DRAM (continuous
  // batching's decode, one row per conversation; quant_bench
  // MatmulQ8Stream I8Row, 2 threads) n = 2 went 33 -> 48 GB/s and n = 4
  // 29 -> 37 against a 2 KiB T0 prefetch. Not for one vector: a decode
  // step's matvec streams from DRAM, and two rows at a time cut that rate
  // by a fifth (quant_bench MatvecQ8 I8Row, 16.3 -> 12.7 GB/s).
  template <int NV>
  void rowPair(size_t r, size_t v0, size_t s0, size_t s1, __m512* acc0, __m512* acc1,
               const PairAhead& ahead) const {
    if constexpr (NV == 1) {  // one vector streams from DRAM: one row at a time is faster there
      row<1>(r, v0, s0, s1, acc0);
      row<1>(r + 1, v0, s0, s1, acc1);
    } else {
      const size_t groups = cols / kQ8Group;
      const int8_t* p0 = data + r * cols;
      const int8_t* p1 = p0 + cols;
      // The prefetch targets at step s0 + t: f0 + t sets, then f1 + t sets.
      const int8_t* f0 = data + ahead.row0 * cols + kSetWeightBytes * ahead.step0;
      const int8_t* f1 = data + ahead.row1 * cols + kSetWeightBytes * ahead.step1 - kSetWeightBytes * ahead.left0;
      __m512 a0[NV], a1[NV];  // in registers: stores through acc0/acc1 could alias the loads
      for (int j = 0; j < NV; ++j) a0[j] = acc0[j], a1[j] = acc1[j];
      const __m512i c128 = _mm512_set1_epi8(char(0x80)), zero = _mm512_setzero_si512();
      for (size_t s = s0; s < s1; ++s) {
        const size_t ng = std::min(kSetGroups, groups - kSetGroups * s);
        __m512i w0[4], w1[4];
        const size_t t = s - s0;
        const int8_t* f = (t < ahead.left0 ? f0 : f1) + kSetWeightBytes * t;
        for (int l = 0; l < 4; ++l) {
          __builtin_prefetch(f + 64 * l, 0, 0);
          __builtin_prefetch(f + cols + 64 * l, 0, 0);
        }
        loadTransposed4(p0 + kSetWeightBytes * s, kQ8Group * ng, w0);
        loadTransposed4(p1 + kSetWeightBytes * s, kQ8Group * ng, w1);
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
          a0[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d0), xs, a0[j]);
          a1[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d1), xs, a1[j]);
        }
      }
      for (int j = 0; j < NV; ++j) acc0[j] = a0[j], acc1[j] = a1[j];
    }
  }

  template <int NV>
  void row(size_t r, size_t v0, size_t s0, size_t s1, __m512* acc) const {
    const size_t groups = cols / kQ8Group;
    const int8_t* p = data + r * cols;
    __m512 a[NV];
    for (int j = 0; j < NV; ++j) a[j] = acc[j];
    const __m512i c128 = _mm512_set1_epi8(char(0x80)), zero = _mm512_setzero_si512();
    for (size_t s = s0; s < s1; ++s) {
      const size_t ng = std::min(kSetGroups, groups - kSetGroups * s);
      __m512i w[4];
      // Non-temporal, kStreamAhead (8 KiB) ahead. One vector (decode) with
      // the hardware prefetcher alone reached 0.55-0.7 of a plain read's
      // bandwidth on Zen 5, with this 0.8-0.95 (MatvecQ8 I8Row, 2 threads:
      // 37.5 -> 55-58 GB/s beside StreamRead 64-71; a T0 prefetch 2 KiB
      // ahead had cost it more than half on Zen 4).
      for (int l = 0; l < 4; ++l) prefetchStream(p + kSetWeightBytes * s + 64 * l);
      loadTransposed4(p + kSetWeightBytes * s, kQ8Group * ng, w);
      __m512i corr = _mm512_dpbusd_epi32(zero, c128, w[0]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[1]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[2]);
      corr = _mm512_dpbusd_epi32(corr, c128, w[3]);
      corr = _mm512_sub_epi32(zero, corr);  // -128 * the lane's sum of q
      for (int j = 0; j < NV; ++j) {
        const int8_t* x = X + (v0 + j) * stride + s * kSetBytes;
        __m512i d = _mm512_dpbusd_epi32(corr, _mm512_loadu_si512(x), w[0]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(x + 64), w[1]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(x + 128), w[2]);
        d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(x + 192), w[3]);
        a[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                               _mm512_loadu_ps(reinterpret_cast<const float*>(x + kSetScaleOffset)), a[j]);
      }
    }
    for (int j = 0; j < NV; ++j) acc[j] = a[j];
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
