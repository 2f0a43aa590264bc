// AVX2 IDOT activation quantizer (act_q8.h), byte-identical to the scalar
// reference in act_q8.cpp by the same rounding steps as codec's weight
// quantizers (k3/codec/round_clamp_avx2.h). Thread-safe.
#include <immintrin.h>

#include "k3/codec/round_clamp_avx2.h"
#include "k3/kernels/act_q8.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx2 {

using codec::avx2::absMax;
using codec::avx2::roundClamp32;
using codec::avx2::scaleFor;

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

}  // namespace k3::kernels::avx2
