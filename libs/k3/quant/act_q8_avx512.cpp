// AVX-512 VNNI IDOT kernel: MXFP4 weights x int8 activations (row kernel in
// act_q8_avx512_rows.h). Two groups are 32 packed bytes; |w| is |doubled e2m1|
// (u8, <= 12) and the factor 2^(s-127)*0.5*xs.
#include "k3/quant/act_q8_avx512_rows.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx512 {

namespace {

struct Mxfp4Format {
  const uint8_t* data;    // packed e2m1 [rows, cols / 2]
  const uint8_t* scales;  // ue8m0 [rows, groups]

  struct Row {
    const uint8_t* p;
    const uint8_t* s;
    __m512i lutMag = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12));
    __m512i nibMask = _mm512_set1_epi16(0x0f0f), signBit = _mm512_set1_epi8(8);

    Q8Weights pair(size_t g, bool alone) const {
      const __m256i bytes =
          alone ? _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)))
                : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 * g));
      __m512i w16 = _mm512_cvtepu8_epi16(bytes);
      __m512i nib = _mm512_and_si512(_mm512_or_si512(w16, _mm512_slli_epi16(w16, 4)), nibMask);
      return {_mm512_shuffle_epi8(lutMag, nib), _mm512_test_epi8_mask(nib, signBit)};
    }
    template <int NV>
    void scale(size_t g0, __mmask16 m, __m512 (&c)[NV]) const {
      // Factor per group; masked-off lanes are 0 * 0.
      __m512 sw = _mm512_castsi512_ps(
          _mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, s + g0)), 23));
      sw = _mm512_mul_ps(sw, _mm512_set1_ps(0.5f));
      for (int j = 0; j < NV; ++j) c[j] = _mm512_mul_ps(sw, c[j]);
    }
    static float finish(float sum) { return sum; }
  };
  Row row(size_t r, size_t cols) const { return {data + r * cols / 2, scales + r * (cols / kMxfp4Group)}; }
};

}  // namespace

void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  Mxfp4Format f{static_cast<const uint8_t*>(w.data), static_cast<const uint8_t*>(w.scales)};
  runBlocked<kQ8VecGroup>(Q8Rows<Mxfp4Format>{Xq, Xs, w.cols, f}, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
