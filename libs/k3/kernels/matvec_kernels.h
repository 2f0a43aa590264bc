// Internal: the per-ISA entry points of the weight x activation kernels
// (matvec.h, act_q8.h) behind their public dispatchers, by the rule of
// isa_dispatch.h. scalar:: (matvec.cpp, act_q8.cpp) is the reference, compiled
// for baseline x86-64; avx2:: lives in *_avx2.cpp, avx512:: in *_avx512.cpp.
// Arguments are already validated by the public functions. Declarations only:
// thread-safe as the kernels are (no shared mutable state).
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/codec/weight_view.h"
#include "k3/kernels/cpu_features.h"

namespace k3::kernels {

// The stored formats the kernels read (libs/k3/codec owns them).
using codec::bf16ToF32;
using codec::bitsToF32;
using codec::checkWeightView;
using codec::f32ToBits;
using codec::kE2M1;
using codec::kE2M1x2;
using codec::kInt4Group;
using codec::kMxfp4Group;
using codec::kScaleFloor;
using codec::ue8m0ToF32;
using codec::weightFormatName;
using codec::WeightFormat;
using codec::WeightView;

#define K3_MATVEC_KERNELS                                                                     \
  void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs);             \
  void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1); \
  /* IDOT, any format hasQ8Kernel() takes (scalar); MXFP4 or I4G64 (avx2) */               \
  void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,   \
                size_t r0, size_t r1);

namespace scalar { K3_MATVEC_KERNELS }
namespace avx2 {
K3_MATVEC_KERNELS
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

#undef K3_MATVEC_KERNELS

// Rows per block in every matmul: a block of rows stays in L1/L2 while all the
// vectors pass over it, so each weight byte comes from memory once per call.
inline constexpr size_t kRowBlock = 16;

}  // namespace k3::kernels
