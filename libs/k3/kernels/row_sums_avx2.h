// Internal: horizontal sums of AVX2 f32 accumulators in one fixed order,
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), one at a time or eight at once with
// the same additions (a transpose-add), so a result's bits do not depend on
// which was used. Internal linkage, AVX2 TUs only (see matmul_driver.h).
// Inline code without shared state: thread-safe.
#pragma once

#include <immintrin.h>

namespace k3::kernels {
namespace {

// The lanes of a summed in the fixed order above.
inline float rowSum(__m256 a) {
  __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  t = _mm_add_ps(t, _mm_movehl_ps(t, t));
  t = _mm_add_ss(t, _mm_movehdup_ps(t));
  return _mm_cvtss_f32(t);
}

// [rowSum(a[0]), ..., rowSum(a[7])], the same additions eight rows at a time.
inline __m256 rowSums8(const __m256* a) {
  __m256 s[4];  // s[k] = [row 2k: b0..b3 | row 2k+1: b0..b3], b_i = a_i + a_(i+4)
  for (int k = 0; k < 4; ++k)
    s[k] = _mm256_add_ps(_mm256_permute2f128_ps(a[2 * k], a[2 * k + 1], 0x20),
                         _mm256_permute2f128_ps(a[2 * k], a[2 * k + 1], 0x31));
  // c0 = b0 + b2, c1 = b1 + b3: u0 = [r0: c0 c1, r2: c0 c1 | r1: c0 c1, r3: c0 c1], u1 for r4..r7.
  __m256 u0 = _mm256_add_ps(_mm256_shuffle_ps(s[0], s[1], 0x44), _mm256_shuffle_ps(s[0], s[1], 0xEE));
  __m256 u1 = _mm256_add_ps(_mm256_shuffle_ps(s[2], s[3], 0x44), _mm256_shuffle_ps(s[2], s[3], 0xEE));
  // c0 + c1 per row: [r0 r2 r4 r6 | r1 r3 r5 r7], then into row order.
  __m256 v = _mm256_add_ps(_mm256_shuffle_ps(u0, u1, 0x88), _mm256_shuffle_ps(u0, u1, 0xDD));
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace
}  // namespace k3::kernels
