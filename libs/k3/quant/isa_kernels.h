// Internal: the per-ISA kernel entry points behind the public dispatchers.
// scalar:: is compiled for baseline x86-64, avx2:: in *_avx2.cpp, avx512:: in
// *_avx512.cpp. Arguments are already validated by the public functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/kernels/cpu_features.h"
#include "k3/quant/weight_view.h"

namespace k3::quant {

#define K3_QUANT_ISA_KERNELS                                                                  \
  void bf16ToF32(const uint16_t* in, float* out, size_t n);                                   \
  void f16ToF32(const uint16_t* in, float* out, size_t n);                                    \
  void f32ToBf16(const float* in, uint16_t* out, size_t n);                                   \
  void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales);  \
  void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed,             \
                       float* scales);                                                        \
  void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs);             \
  void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1); \
  /* IDOT, any format hasQ8Kernel() takes (scalar); MXFP4 or I4G64 (avx2) */               \
  void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,   \
                size_t r0, size_t r1);

namespace scalar { K3_QUANT_ISA_KERNELS }
namespace avx2 {
K3_QUANT_ISA_KERNELS
// IDOT on int8-row weights (act_q8_i8_avx2.cpp).
void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1);
}  // namespace avx2
// AVX-512 only where it pays: the wide decode/dot kernels (IDOT: MXFP4 and
// int8 rows) and the activation quantiser. The rest use avx2::.
namespace avx512 {
void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1);
void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1);
void matmulI8Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                size_t r0, size_t r1);
// The activation quantiser sixteen groups at a time (act_quantize_avx512.cpp).
void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs);
}  // namespace avx512

#undef K3_QUANT_ISA_KERNELS

// Rows per block in every matmul: a block of rows stays in L1/L2 while all the
// vectors pass over it, so each weight byte comes from memory once per call.
inline constexpr size_t kRowBlock = 16;

}  // namespace k3::quant
