// AVX2 quantizers: weights (spec 5.3/5.4) and IDOT activations. Byte-identical
// to the scalar ones: max|w| is exact in any order, the scale is the same
// scalar division, and vroundps(nearest) is rint in the default mode.
#include <immintrin.h>

#include <cmath>

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/quantize.h"

namespace k3::quant::avx2 {

namespace {

// max|w| over n floats; NaN ignored (max_ps returns its second operand then).
float absMax(const float* w, size_t n) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(w + i), absMask), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float am = 0.0f;
  for (float v : lanes) am = v > am ? v : am;
  for (; i < n; ++i) {
    float a = std::fabs(w[i]);
    am = a > am ? a : am;
  }
  return am;
}

float scaleFor(float am, float qmax) {
  float s = am / qmax;
  return s < kScaleFloor ? kScaleFloor : s;
}

// rint(w*inv) clamped to [lo, hi] as int32; NaN -> hi like the scalar code.
inline __m256i roundClamp(__m256 w, __m256 inv, __m256 lo, __m256 hi) {
  __m256 r = _mm256_round_ps(_mm256_mul_ps(w, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_min_ps(r, hi);  // NaN -> hi
  r = _mm256_max_ps(r, lo);
  return _mm256_cvtps_epi32(r);
}

// 32 floats -> 32 int8 in order, values already within int8.
inline __m256i roundClamp32(const float* w, __m256 inv, __m256 lo, __m256 hi) {
  __m256i a = roundClamp(_mm256_loadu_ps(w), inv, lo, hi);
  __m256i b = roundClamp(_mm256_loadu_ps(w + 8), inv, lo, hi);
  __m256i c = roundClamp(_mm256_loadu_ps(w + 16), inv, lo, hi);
  __m256i d = roundClamp(_mm256_loadu_ps(w + 24), inv, lo, hi);
  __m256i ab = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
  __m256i cd = _mm256_packs_epi32(c, d);
  __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quantizeRowInt8(const float* w, size_t n, int8_t* q, float inv) {
  const __m256 vinv = _mm256_set1_ps(inv), lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f);
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), roundClamp32(w + i, vinv, lo, hi));
  for (; i < n; ++i) {
    float r = std::fmax(-127.f, std::fmin(127.f, std::rint(w[i] * inv)));
    q[i] = int8_t(r);
  }
}

}  // namespace

void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float s = scaleFor(absMax(row, cols), 127.0f);
    quantizeRowInt8(row, cols, q + r * cols, 1.0f / s);
    scales[r] = s;
  }
}

void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales) {
  const size_t groups = rows * (cols / kInt4Group);
  const __m256 lo = _mm256_set1_ps(-8.f), hi = _mm256_set1_ps(7.f);
  const __m256i eight = _mm256_set1_epi8(8), low = _mm256_set1_epi16(0x00ff);
  for (size_t g = 0; g < groups; ++g) {
    const float* src = w + g * kInt4Group;
    float s = scaleFor(absMax(src, kInt4Group), 7.0f);
    __m256 inv = _mm256_set1_ps(1.0f / s);
    // u in [0,15] as bytes, columns in order; then even | odd << 4 per pair.
    __m256i u0 = _mm256_add_epi8(roundClamp32(src, inv, lo, hi), eight);
    __m256i u1 = _mm256_add_epi8(roundClamp32(src + 32, inv, lo, hi), eight);
    __m256i p0 = _mm256_or_si256(_mm256_and_si256(u0, low), _mm256_srli_epi16(u0, 4));
    __m256i p1 = _mm256_or_si256(_mm256_and_si256(u1, low), _mm256_srli_epi16(u1, 4));
    // p: 16-bit words holding one byte each -> pack to bytes, fix lane order.
    __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(p0, p1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + g * (kInt4Group / 2)), bytes);
    scales[g] = s;
  }
}

void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs) {
  const __m256 lo = _mm256_set1_ps(-127.f), hi = _mm256_set1_ps(127.f);
  for (size_t g = 0; g < n / kQ8Group; ++g) {
    const float* src = x + g * kQ8Group;
    float s = scaleFor(absMax(src, kQ8Group), 127.0f);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + g * kQ8Group),
                        roundClamp32(src, _mm256_set1_ps(1.0f / s), lo, hi));
    xs[g] = s;
  }
}

}  // namespace k3::quant::avx2
