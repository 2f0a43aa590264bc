// Internal: the per-ISA entry points of codec's array conversions (bf16.h) and
// weight quantizers (quantize.h) behind their public dispatchers, by the rule
// of k3/kernels/isa_dispatch.h. scalar:: (bf16.cpp, quantize.cpp) is the
// reference, compiled for baseline x86-64; avx2:: lives in *_avx2.cpp.
// Arguments are already validated by the public functions. Declarations only;
// the functions share no mutable state: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::codec {

#define K3_CODEC_KERNELS                                                                     \
  void bf16ToF32(const uint16_t* in, float* out, size_t n);                                  \
  void f16ToF32(const uint16_t* in, float* out, size_t n);                                   \
  void f32ToBf16(const float* in, uint16_t* out, size_t n);                                  \
  void quantizeInt8Rows(const float* w, size_t rows, size_t cols, int8_t* q, float* scales); \
  void quantizeInt4G64(const float* w, size_t rows, size_t cols, uint8_t* packed, float* scales);  \
  void dequantizeInt8Rows(const int8_t* q, const float* scales, size_t rows, size_t cols, float* out);

namespace scalar { K3_CODEC_KERNELS }
namespace avx2 { K3_CODEC_KERNELS }

#undef K3_CODEC_KERNELS

}  // namespace k3::codec
