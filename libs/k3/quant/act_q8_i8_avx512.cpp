// AVX-512 VNNI IDOT kernel: int8-row weights x int8 activations (row kernel in
// act_q8_avx512_rows.h). Two groups are 64 bytes; |w| is |q| (u8; |xq| <= 127
// so the masked negate cannot overflow) and the factor xs alone: the row scale
// multiplies the finished sum.
#include "k3/quant/act_q8_avx512_rows.h"
#include "k3/quant/isa_kernels.h"

namespace k3::quant::avx512 {

namespace {

struct I8Format {
  const int8_t* data;    // q [rows, cols]
  const float* scales;   // [rows]

  struct Row {
    const int8_t* p;
    float s;

    Q8Weights pair(size_t g, bool alone) const {
      const __m512i w = _mm512_maskz_loadu_epi8(alone ? 0xffffffffull : ~0ull, p + kQ8Group * g);
      return {_mm512_abs_epi8(w), _mm512_movepi8_mask(w)};
    }
    template <int NV>
    void scale(size_t, __mmask16, __m512 (&)[NV]) const {}
    float finish(float sum) const { return s * sum; }
  };
  Row row(size_t r, size_t cols) const { return {data + r * cols, scales[r]}; }
};

}  // namespace

void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1) {
  I8Format f{static_cast<const int8_t*>(w.data), static_cast<const float*>(w.scales)};
  runBlocked<kQ8VecGroup>(Q8Rows<I8Format>{Xq, Xs, w.cols, f}, n, r0, r1, w.rows, Y);
}

}  // namespace k3::quant::avx512
