// AVX2/FMA matmul kernels for every weight format (matvec is n = 1).
// Weights are decoded to f32 in registers (8 columns per __m256) and FMA'd into
// four accumulators per vector; 4-bit formats multiply by the group scale first
// (exact for MXFP4, the spec's dequantised value for int4), so the sum is
// sum_i x[i]*W[r,i] with the dequantised weights.
#include <immintrin.h>

#include "k3/quant/bf16.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"
#include "k3/quant/mxfp4.h"
#include "k3/quant/quantize.h"

namespace k3::quant::avx2 {

namespace {

constexpr int kVecGroup = 2;  // 16 ymm registers: 2 vectors x 4 accumulators + decode

// Fixed-order horizontal sum of four accumulators.
inline float reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  q = _mm_add_ss(q, _mm_movehdup_ps(q));
  return _mm_cvtss_f32(q);
}

// Row kernels for formats with one weight per element (F32, BF16, I8): Load8
// gives 8 weights as f32, Load1 one weight (column tail).
template <class Load8, class Load1>
struct DenseKernel {
  const float* X;
  size_t cols;
  Load8 load8;
  Load1 load1;
  template <int NV>
  void rowDot(size_t r, size_t v0, float* out) const {
    __m256 acc[NV][4];
    for (int j = 0; j < NV; ++j)
      for (int k = 0; k < 4; ++k) acc[j][k] = _mm256_setzero_ps();
    const float* x[NV];
    for (int j = 0; j < NV; ++j) x[j] = X + (v0 + j) * cols;
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
      __m256 w[4];
      for (int k = 0; k < 4; ++k) w[k] = load8(r, i + 8 * k);
      for (int j = 0; j < NV; ++j)
        for (int k = 0; k < 4; ++k)
          acc[j][k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x[j] + i + 8 * k), acc[j][k]);
    }
    for (; i + 8 <= cols; i += 8) {
      __m256 w = load8(r, i);
      for (int j = 0; j < NV; ++j)
        acc[j][0] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[j] + i), acc[j][0]);
    }
    for (int j = 0; j < NV; ++j) {
      float tail = 0.0f;
      for (size_t t = i; t < cols; ++t) tail += x[j][t] * load1(r, t);
      out[j] = reduce4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]) + tail;
    }
  }
};

template <class Load8, class Load1, class Finish>
struct DenseRows : DenseKernel<Load8, Load1> {
  Finish finish;
  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    this->template rowDot<NV>(r, v0, out);
    for (int j = 0; j < NV; ++j) out[j] = finish(r, out[j]);
  }
};

template <class Load8, class Load1, class Finish>
void runDense(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1,
              Load8 load8, Load1 load1, Finish finish) {
  DenseRows<Load8, Load1, Finish> k{{X, w.cols, load8, load1}, finish};
  runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
}

// 4-bit formats: 16 packed bytes -> 32 int8 values in column order via a
// 16-entry byte table, one f32 scale per 32 columns.
template <class BlockScale>
struct NibbleRows {
  const float* X;
  size_t cols;
  const uint8_t* data;
  __m256i lut;            // nibble -> int8 value (both lanes)
  BlockScale blockScale;  // (row, 32-column block) -> f32 multiplier

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    __m256 acc[NV][4];
    for (int j = 0; j < NV; ++j)
      for (int k = 0; k < 4; ++k) acc[j][k] = _mm256_setzero_ps();
    const float* x[NV];
    for (int j = 0; j < NV; ++j) x[j] = X + (v0 + j) * cols;
    const uint8_t* p = data + r * cols / 2;
    const __m256i nibMask = _mm256_set1_epi16(0x0f0f);
    for (size_t b = 0; b < cols / 32; ++b) {
      __m256i w16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * b)));
      __m256i nib = _mm256_and_si256(_mm256_or_si256(w16, _mm256_slli_epi16(w16, 4)), nibMask);
      __m256i vals = _mm256_shuffle_epi8(lut, nib);
      __m128i lo = _mm256_castsi256_si128(vals), hi = _mm256_extracti128_si256(vals, 1);
      __m256 s = _mm256_set1_ps(blockScale(r, b));
      __m256 w[4];
      w[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), s);
      w[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), s);
      w[2] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), s);
      w[3] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), s);
      for (int j = 0; j < NV; ++j)
        for (int k = 0; k < 4; ++k)
          acc[j][k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x[j] + 32 * b + 8 * k), acc[j][k]);
    }
    for (int j = 0; j < NV; ++j) out[j] = reduce4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
  }
};

template <class BlockScale>
NibbleRows<BlockScale> nibbleRows(const float* X, const WeightView& w, __m256i lut, BlockScale bs) {
  return NibbleRows<BlockScale>{X, w.cols, static_cast<const uint8_t*>(w.data), lut, bs};
}

}  // namespace

void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  const size_t cols = w.cols;
  auto plain = [](size_t, float v) { return v; };
  switch (w.format) {
    case WeightFormat::F32: {
      const float* d = static_cast<const float*>(w.data);
      return runDense(
          w, X, n, Y, r0, r1, [d, cols](size_t r, size_t i) { return _mm256_loadu_ps(d + r * cols + i); },
          [d, cols](size_t r, size_t i) { return d[r * cols + i]; }, plain);
    }
    case WeightFormat::BF16: {
      const uint16_t* d = static_cast<const uint16_t*>(w.data);
      return runDense(
          w, X, n, Y, r0, r1,
          [d, cols](size_t r, size_t i) {
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + r * cols + i)));
            return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
          },
          [d, cols](size_t r, size_t i) { return k3::quant::bf16ToF32(d[r * cols + i]); }, plain);
    }
    case WeightFormat::I8Row: {
      const int8_t* d = static_cast<const int8_t*>(w.data);
      const float* s = static_cast<const float*>(w.scales);
      return runDense(
          w, X, n, Y, r0, r1,
          [d, cols](size_t r, size_t i) {
            __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(d + r * cols + i));
            return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
          },
          [d, cols](size_t r, size_t i) { return float(d[r * cols + i]); },
          [s](size_t r, float v) { return s[r] * v; });
    }
    case WeightFormat::I4G64: {
      const float* s = static_cast<const float*>(w.scales);
      const size_t gpr = cols / kInt4Group;
      auto k = nibbleRows(X, w,
                          _mm256_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7,
                                           -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7),
                          [s, gpr](size_t r, size_t b) { return s[r * gpr + b / 2]; });
      return runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
    }
    case WeightFormat::MXFP4: {
      const uint8_t* s = static_cast<const uint8_t*>(w.scales);
      const size_t gpr = cols / kMxfp4Group;
      // Doubled e2m1 table, so the exact weight is code*2 * (2^(s-127) * 0.5).
      auto k = nibbleRows(X, w,
                          _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                           0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12),
                          [s, gpr](size_t r, size_t b) { return ue8m0ToF32(s[r * gpr + b]) * 0.5f; });
      return runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
    }
  }
}

}  // namespace k3::quant::avx2
