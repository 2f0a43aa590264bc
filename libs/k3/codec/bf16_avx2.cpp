// AVX2/F16C array conversions between f32 and bf16/f16 (bits identical to the
// scalar functions in bf16.h).
// Thread-safe: no shared mutable state.
#include <immintrin.h>

#include "k3/codec/bf16.h"
#include "k3/codec/codec_kernels.h"

namespace k3::codec::avx2 {

void bf16ToF32(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
  }
  for (; i < n; ++i) out[i] = k3::codec::bf16ToF32(in[i]);
}

void f16ToF32(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = k3::codec::f16ToF32(in[i]);
}

// Round-to-nearest-even on the top half, NaN -> top half with the quiet bit.
static inline __m256i roundToBf16(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
  r = _mm256_srli_epi32(r, 16);
  const __m256i mag = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i isNan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000));
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  return _mm256_blendv_epi8(r, nan, isNan);
}

void f32ToBf16(const float* in, uint16_t* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i a = roundToBf16(_mm256_loadu_ps(in + i));
    __m256i b = roundToBf16(_mm256_loadu_ps(in + i + 8));
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = k3::codec::f32ToBf16(in[i]);
}

}  // namespace k3::codec::avx2
