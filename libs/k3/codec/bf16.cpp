// Array conversions: scalar loops here, AVX2/F16C loops in bf16_avx2.cpp.
// Thread-safe: no shared mutable state.
#include "k3/codec/bf16.h"

#include "k3/codec/codec_kernels.h"
#include "k3/io/error.h"
#include "k3/kernels/isa_dispatch.h"

namespace k3::codec {

namespace scalar {
void bf16ToF32(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = k3::codec::bf16ToF32(in[i]);
}
void f16ToF32(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = k3::codec::f16ToF32(in[i]);
}
void f32ToBf16(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = k3::codec::f32ToBf16(in[i]);
}
}  // namespace scalar

// AVX-512 adds nothing for these memory-bound loops: the AVX2 code serves both.
void bf16ToF32(kernels::Isa isa, const uint16_t* in, float* out, size_t n) {
  K3_KERNEL_FOR(kernels::requireIsa(isa, "bf16ToF32"), bf16ToF32)(in, out, n);
}
void f16ToF32(kernels::Isa isa, const uint16_t* in, float* out, size_t n) {
  K3_KERNEL_FOR(kernels::requireIsa(isa, "f16ToF32"), f16ToF32)(in, out, n);
}
void f32ToBf16(kernels::Isa isa, const float* in, uint16_t* out, size_t n) {
  K3_KERNEL_FOR(kernels::requireIsa(isa, "f32ToBf16"), f32ToBf16)(in, out, n);
}

void bf16ToF32(const uint16_t* in, float* out, size_t n) { bf16ToF32(kernels::bestIsa(), in, out, n); }
void f16ToF32(const uint16_t* in, float* out, size_t n) { f16ToF32(kernels::bestIsa(), in, out, n); }
void f32ToBf16(const float* in, uint16_t* out, size_t n) { f32ToBf16(kernels::bestIsa(), in, out, n); }

}  // namespace k3::codec
