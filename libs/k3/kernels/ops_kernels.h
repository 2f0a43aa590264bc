// Internal: the per-ISA kernels behind ops.h. scalar:: (ops_scalar.cpp) is
// the reference, compiled for baseline x86-64; avx2:: (ops_avx2.cpp, AVX2 +
// FMA) and avx512:: for the few ops where 16 lanes pay; ops.cpp picks one by
// the rule of isa_dispatch.h.
// Thread-safety: pure functions on caller-owned buffers; safe from any thread.
#pragma once

#include <cstddef>


namespace k3::kernels {

#define K3_OPS_KERNELS                                                                      \
  void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out);                  \
  void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out);     \
  void softmax(float* x, size_t n);                                                               \
  float dot(const float* a, const float* b, size_t n);                                            \
  void axpy(float a, const float* x, float* y, size_t n);                                         \
  void mulSigmoid(float* x, const float* g, size_t n);                                            \
  void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv);        \
  /* elementwise math, out may alias x (the building blocks above; tested apart) */               \
  void expArray(const float* x, size_t n, float* out);                                            \
  void expm1Array(const float* x, size_t n, float* out);                                          \
  void tanhArray(const float* x, size_t n, float* out);                                           \
  void sigmoidArray(const float* x, size_t n, float* out);

namespace scalar { K3_OPS_KERNELS }
namespace avx2 { K3_OPS_KERNELS }

#undef K3_OPS_KERNELS

// avx512:: (ops_avx512.cpp) holds only the ops bound by arithmetic, where
// 16 lanes pay; each gives avx2::'s bits.
namespace avx512 {
void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out);
void expArray(const float* x, size_t n, float* out);
void expm1Array(const float* x, size_t n, float* out);
}  // namespace avx512

}  // namespace k3::kernels
