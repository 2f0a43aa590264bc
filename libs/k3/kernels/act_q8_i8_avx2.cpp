// AVX2 IDOT kernel: int8-row weights x int8 activations (act_q8.h).
//
// Weights and activations are both signed bytes in column order, so nothing
// is re-laid: per 32-group, maddubs(|q|, sign(xq, q)) gives the exact int16
// pair sums of q*xq (|q*xq| <= 128*127, a pair <= 32512 fits), madd with ones
// widens them to 8 int32, and one convert + FMA applies the group's xs. The
// row scale multiplies the finished sum. |q| and the weight load are shared
// by the NV vectors of a row.
//
// Each vector has two accumulators (even / odd groups, to hide FMA latency)
// added at the end; the driver sums the lanes and applies the row scale
// (matmul_driver_avx2.h), independent of NV: matmul == matvec.
// Thread-safe: no shared mutable state.
#include <immintrin.h>

#include "k3/kernels/act_q8.h"
#include "k3/kernels/matmul_driver_avx2.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx2 {

namespace {

constexpr int kVecGroup = 4;

struct I8Q8Rows {
  const int8_t* Xq;  // [n, cols]
  const float* Xs;   // [n, cols / 32]
  size_t cols;
  const int8_t* data;
  const float* rowScales;  // the driver multiplies each row's finished sum

  template <int NV>
  void row(size_t r, size_t v0, __m256* out) const {
    const size_t groups = cols / kQ8Group;
    const int8_t* xq[NV];
    const float* xs[NV];
    __m256 acc[NV][2];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * cols;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j][0] = acc[j][1] = _mm256_setzero_ps();
    }
    const int8_t* p = data + r * cols;
    // Group g goes to accumulator g & 1 (indices fixed at compile time: a
    // run-time index puts the accumulators in memory).
    auto group = [&](size_t g, int h) {
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kQ8Group * g));
      const __m256i a = _mm256_abs_epi8(w);
      const __m256i ones = _mm256_set1_epi16(1);
      for (int j = 0; j < NV; ++j) {
        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + kQ8Group * g));
        __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(x, w)), ones);
        acc[j][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_broadcast_ss(xs[j] + g), acc[j][h]);
      }
    };
    size_t g = 0;
    for (; g + 2 <= groups; g += 2) {
      // One vector (decode): non-temporal, further ahead (matmul_driver.h).
      if constexpr (NV == 1)
        prefetchStream(p + kQ8Group * g);
      else
        _mm_prefetch(reinterpret_cast<const char*>(p + kQ8Group * g + kPrefetchAhead), _MM_HINT_T0);
      group(g, 0);
      group(g + 1, 1);
    }
    if (g < groups) group(g, 0);
    for (int j = 0; j < NV; ++j) out[j] = _mm256_add_ps(acc[j][0], acc[j][1]);
  }
};

}  // namespace

void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1) {
  I8Q8Rows k{Xq, Xs, w.cols, static_cast<const int8_t*>(w.data), static_cast<const float*>(w.scales)};
  runBlocked8<kVecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace k3::kernels::avx2
