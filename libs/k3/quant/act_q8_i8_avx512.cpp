// AVX-512 VNNI IDOT kernel: int8-row weights x int8 activations, two
// 32-groups (64 bytes) per step.
//
// vpdpbusd takes its first operand unsigned, so each weight byte is used as
// q + 128 (one xor, shared by the vectors) and the activations stay signed:
// sum (q+128)*xq = sum q*xq + 128*sum xq. The activations are copied once per
// call into a per-pair layout (the 64 bytes of xq; then a correction vector,
// -128 * the group's sum of xq in lane 0 of the group's eight lanes, zeros
// elsewhere; then xs of the group in each of its eight lanes), so per pair and
// vector one vpdpbusd started from the correction leaves exact integer
// partial dots (lanes 0-7 group g, 8-15 group g+1; |lane| < 2^24, so the
// convert is exact), and one convert and one FMA apply xs. The row scale
// multiplies the row's summed lanes. The same operations for every vector:
// matmul == matvec bit for bit.
//
// Against |q| and a masked negate of xq per vector and a permute of xs per
// pair, this is three vector operations per pair and vector instead of five.
#include <cstring>
#include <vector>

#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"

namespace k3::quant::avx512 {

namespace {

constexpr int kI8VecGroup = 4;
constexpr size_t kPairBytes = 64 + 64 + 64;  // xq, correction, xs
constexpr size_t kI8CorrOffset = 64, kI8ScaleOffset = 128;
// Re-laid activations up to this size live on the stack: 3 bytes per column,
// so a decode step never allocates, even at K3's widest input (33792 columns: 99 KiB).
constexpr size_t kI8StackBytes = 128 << 10;

size_t pairsOf(size_t groups) { return (groups + 1) / 2; }

// One activation vector into the pair layout; the missing second group of an
// odd count is all zeros.
void relayoutI8(const int8_t* x, const float* xs, size_t groups, int8_t* out) {
  std::memset(out, 0, pairsOf(groups) * kPairBytes);
  for (size_t g = 0; g < groups; ++g) {
    int8_t* p = out + (g / 2) * kPairBytes;
    const size_t half = 32 * (g % 2);
    const int8_t* src = x + kQ8Group * g;
    std::memcpy(p + half, src, kQ8Group);
    int32_t sum = 0;
    for (size_t i = 0; i < kQ8Group; ++i) sum += src[i];
    const int32_t corr = -128 * sum;
    std::memcpy(p + kI8CorrOffset + half, &corr, 4);
    for (int l = 0; l < 8; ++l) std::memcpy(p + kI8ScaleOffset + half + 4 * l, xs + g, 4);
  }
}

struct I8PairRows {
  const int8_t* X;  // re-laid activations, [n, stride]
  size_t stride;    // pairsOf(groups) * kPairBytes
  size_t cols;
  const int8_t* data;    // q [rows, cols]
  const float* scales;   // [rows]

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    const size_t groups = cols / kQ8Group, pairs = pairsOf(groups);
    const int8_t* p = data + r * cols;
    __m512 acc[NV][2];
    for (int j = 0; j < NV; ++j) acc[j][0] = acc[j][1] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    // Pair q into accumulator h (a compile-time constant after inlining).
    auto pair = [&](size_t q, int h) {
      const bool whole = 2 * q + 2 <= groups;
      __builtin_prefetch(p + 64 * q + kPrefetchAhead);
      const __m512i u = _mm512_xor_si512(
          whole ? _mm512_loadu_si512(p + 64 * q) : _mm512_maskz_loadu_epi8(0xffffffffull, p + 64 * q), flip);
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + q * kPairBytes;
        __m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(a + kI8CorrOffset), u, _mm512_loadu_si512(a));
        acc[j][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d),
                                    _mm512_loadu_ps(reinterpret_cast<const float*>(a + kI8ScaleOffset)), acc[j][h]);
      }
    };
    size_t q = 0;
    for (; q + 2 <= pairs; q += 2) {
      pair(q, 0);
      pair(q + 1, 1);
    }
    if (q < pairs) pair(q, 0);
    for (int j = 0; j < NV; ++j) out[j] = scales[r] * _mm512_reduce_add_ps(_mm512_add_ps(acc[j][0], acc[j][1]));
  }
};

}  // namespace

void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1) {
  const size_t groups = w.cols / kQ8Group, stride = pairsOf(groups) * kPairBytes;
  if (n == 0 || r0 == r1) return;
  // Decode (n == 1) never allocates; a large prefill batch uses the heap once.
  alignas(64) int8_t stackBuf[kI8StackBytes];
  std::vector<int8_t> heapBuf;
  int8_t* buf = stackBuf;
  if (n * stride > kI8StackBytes) {
    heapBuf.resize(n * stride);
    buf = heapBuf.data();
  }
  for (size_t v = 0; v < n; ++v) relayoutI8(Xq + v * w.cols, Xs + v * groups, groups, buf + v * stride);
  I8PairRows k{buf, stride, w.cols, static_cast<const int8_t*>(w.data), static_cast<const float*>(w.scales)};
  runBlocked<kI8VecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
