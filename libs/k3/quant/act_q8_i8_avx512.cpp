// AVX-512 VNNI IDOT kernel: int8-row weights x int8 activations, two
// 32-groups (64 bytes) per step.
//
// vpdpbusd takes its first operand unsigned, so the activations are used as
// xq + 128 (u8; re-laid once per call) and the weights stay signed:
// sum (xq+128)*q = sum xq*q + 128*sum q. The correction depends on the weights
// only: per pair one vpdpbusd of 128s against q (shared by the vectors) gives
// per lane 128 * the sum of the four q that lane multiplies, and each
// vector's vpdpbusd starts from its negation, leaving the exact integer
// partial dots of q*xq (lanes 0-7 group g, 8-15 group g+1; |lane| <=
// 4*128*127, exact in f32). One convert and one FMA apply xs, which the
// re-layout put in each group's eight lanes. The row scale multiplies the
// row's summed lanes. The same operations for every vector: matmul == matvec
// bit for bit.
//
// Against |q| and a masked negate of xq per vector and a permute of xs per
// pair, this is three vector operations per pair and vector instead of five;
// against a correction vector re-laid per vector, two loads instead of three
// (quant_bench MatmulQ8Shape I8Row 768 x 768, 32 vectors: 58 -> 85 G/s).
#include <cstring>
#include <vector>

#include "k3/quant/avx512_intrinsics.h"

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"

namespace k3::quant::avx512 {

namespace {

constexpr int kI8VecGroup = 4;
constexpr size_t kPairBytes = 64 + 64;  // xq + 128, xs
constexpr size_t kI8ScaleOffset = 64;
// Re-laid activations up to this size live on the stack: 2 bytes per column,
// so a decode step never allocates, even at K3's widest input (33792 columns: 66 KiB).
constexpr size_t kI8StackBytes = 128 << 10;

size_t pairsOf(size_t groups) { return (groups + 1) / 2; }

// One activation vector into the pair layout (xq + 128 as u8, then xs in
// each group's lanes); the missing second group of an odd count is xq = 0.
void relayoutI8(const int8_t* x, const float* xs, size_t groups, int8_t* out) {
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const __m512i halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  for (size_t q = 0; q < pairsOf(groups); ++q) {
    const bool whole = 2 * q + 2 <= groups;
    const __m512i v = whole ? _mm512_loadu_si512(x + 64 * q) : _mm512_maskz_loadu_epi8(0xffffffffull, x + 64 * q);
    int8_t* p = out + q * kPairBytes;
    _mm512_storeu_si512(p, _mm512_xor_si512(v, flip));
    const __m512 s2 = _mm512_maskz_loadu_ps(whole ? 0x3 : 0x1, xs + 2 * q);
    _mm512_storeu_ps(reinterpret_cast<float*>(p + kI8ScaleOffset), _mm512_permutexvar_ps(halves, s2));
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
    const __m512i c128 = _mm512_set1_epi8(char(0x80)), zero = _mm512_setzero_si512();
    // Pair q into accumulator h (a compile-time constant after inlining).
    auto pair = [&](size_t q, int h) {
      const bool whole = 2 * q + 2 <= groups;

      const __m512i w = whole ? _mm512_loadu_si512(p + 64 * q) : _mm512_maskz_loadu_epi8(0xffffffffull, p + 64 * q);
      const __m512i corr = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, c128, w));
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + q * kPairBytes;
        __m512i d = _mm512_dpbusd_epi32(corr, _mm512_loadu_si512(a), w);
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
