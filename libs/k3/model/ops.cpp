// Run-time choice between the SIMD kernels and the scalar reference.
#include "k3/model/ops.h"

#include "k3/model/ops_kernels.h"

namespace k3::model {

void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out) {
  useAvx2() ? avx2::rmsNorm(x, w, n, eps, out) : scalar::rmsNorm(x, w, n, eps, out);
}

void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out) {
  if (useAvx512()) return avx512::situGlu(gate, up, n, b1, b2, out);
  useAvx2() ? avx2::situGlu(gate, up, n, b1, b2, out) : scalar::situGlu(gate, up, n, b1, b2, out);
}

void softmax(float* x, size_t n) { useAvx2() ? avx2::softmax(x, n) : scalar::softmax(x, n); }

float dot(const float* a, const float* b, size_t n) { return useAvx2() ? avx2::dot(a, b, n) : scalar::dot(a, b, n); }

void axpy(float a, const float* x, float* y, size_t n) { useAvx2() ? avx2::axpy(a, x, y, n) : scalar::axpy(a, x, y, n); }

void mulSigmoid(float* x, const float* g, size_t n) {
  useAvx2() ? avx2::mulSigmoid(x, g, n) : scalar::mulSigmoid(x, g, n);
}

void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv) {
  useAvx2() ? avx2::dotAndSquaresF64(v, w, n, vw, vv) : scalar::dotAndSquaresF64(v, w, n, vw, vv);
}

}  // namespace k3::model
