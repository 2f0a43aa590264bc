// The public ops: each runs the path isa_dispatch.h picks.
#include "k3/kernels/ops.h"

#include "k3/kernels/isa_dispatch.h"
#include "k3/kernels/ops_kernels.h"

namespace k3::kernels {

void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out) { K3_KERNEL(rmsNorm)(x, w, n, eps, out); }

void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out) {
  K3_KERNEL3(situGlu)(gate, up, n, b1, b2, out);
}

void softmax(float* x, size_t n) { K3_KERNEL(softmax)(x, n); }

float dot(const float* a, const float* b, size_t n) { return K3_KERNEL(dot)(a, b, n); }

void axpy(float a, const float* x, float* y, size_t n) { K3_KERNEL(axpy)(a, x, y, n); }

void mulSigmoid(float* x, const float* g, size_t n) { K3_KERNEL(mulSigmoid)(x, g, n); }

void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv) {
  K3_KERNEL(dotAndSquaresF64)(v, w, n, vw, vv);
}

}  // namespace k3::kernels
