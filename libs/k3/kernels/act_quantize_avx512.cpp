// AVX-512 quantizeActivationsQ8_32 (act_q8.h): sixteen 32-groups at a time.
// Each group's max|x| comes out of one 16 x 16 transpose-max (max is exact
// in any order, and NaN lanes drop out as in the other paths), the sixteen
// scales and their inverses are two vector divisions (the scalar code's
// divisions, rounded the same), and each group rounds, clamps and narrows
// like act_quantize_avx2.cpp: the same bytes as scalar and AVX2. Groups past the
// last sixteen go through the AVX2 code. One group at a time, the horizontal
// max and the two scalar divisions were a latency chain per 32 values.
// Thread-safe: no shared mutable state.
#include "k3/kernels/avx512_intrinsics.h"

#include "k3/codec/quantize.h"
#include "k3/kernels/act_q8.h"
#include "k3/kernels/group_transpose_avx512.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx512 {

namespace {

// 16 floats -> 16 int8: rint(x * inv) clamped to [-127, 127] (NaN -> 127).
inline __m128i roundClamp16(__m512 x, __m512 inv) {
  __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_min_ps(r, _mm512_set1_ps(127.0f));  // NaN -> 127
  r = _mm512_max_ps(r, _mm512_set1_ps(-127.0f));
  return _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(r));
}

}  // namespace

void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs) {
  const size_t groups = n / kQ8Group;
  const __m512 absMask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff)), zero = _mm512_setzero_ps();
  size_t g = 0;
  for (; g + 16 <= groups; g += 16) {
    const float* src = x + g * kQ8Group;
    __m512 m[16];
    for (int i = 0; i < 16; ++i) {
      const __m512 a = _mm512_and_ps(_mm512_loadu_ps(src + 32 * i), absMask);
      const __m512 b = _mm512_and_ps(_mm512_loadu_ps(src + 32 * i + 16), absMask);
      m[i] = _mm512_max_ps(b, _mm512_max_ps(a, zero));  // max returns its second operand for a NaN
    }
    // Lane g: group g's max (the operands are never NaN there).
    const __m512 am = transposeReduce16(m, [](__m512 p, __m512 q) { return _mm512_max_ps(p, q); });
    const __m512 s = _mm512_max_ps(_mm512_div_ps(am, _mm512_set1_ps(127.0f)), _mm512_set1_ps(kScaleFloor));
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), s);
    _mm512_storeu_ps(xs + g, s);
    alignas(64) float invs[16];
    _mm512_storeu_ps(invs, inv);
    for (int i = 0; i < 16; ++i) {
      const __m512 vi = _mm512_set1_ps(invs[i]);
      int8_t* out = xq + (g + static_cast<size_t>(i)) * kQ8Group;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), roundClamp16(_mm512_loadu_ps(src + 32 * i), vi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), roundClamp16(_mm512_loadu_ps(src + 32 * i + 16), vi));
    }
  }
  if (g < groups) avx2::quantizeActivationsQ8_32(x + g * kQ8Group, n - g * kQ8Group, xq + g * kQ8Group, xs + g);
}

}  // namespace k3::kernels::avx512
