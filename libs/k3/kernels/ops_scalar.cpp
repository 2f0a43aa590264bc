// The scalar reference kernels of ops.h (baseline x86-64, libm functions):
// the arithmetic the spec describes, in the plainest order.
#include <algorithm>
#include <cmath>

#include "k3/kernels/ops.h"
#include "k3/kernels/ops_kernels.h"

namespace k3::kernels::scalar {

void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out) {
  double ms = 0.0;
  for (size_t i = 0; i < n; ++i) ms += static_cast<double>(x[i]) * x[i];
  const float r = 1.0f / std::sqrt(static_cast<float>(ms / static_cast<double>(n)) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * r * w[i];
}

void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out) {
  for (size_t i = 0; i < n; ++i) {
    const float g = gate[i], u = up[i];
    out[i] = (b1 * std::tanh(g / b1) * sigmoid(g)) * (b2 * std::tanh(u / b2));
  }
}

void softmax(float* x, size_t n) {
  if (n == 0) return;
  const float m = *std::max_element(x, x + n);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  for (size_t i = 0; i < n; ++i) x[i] /= sum;
}

float dot(const float* a, const float* b, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axpy(float a, const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void mulSigmoid(float* x, const float* g, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= sigmoid(g[i]);
}

void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv) {
  double num = 0.0, ss = 0.0;
  for (size_t i = 0; i < n; ++i) {
    num += static_cast<double>(v[i]) * w[i];
    ss += static_cast<double>(v[i]) * v[i];
  }
  *vw = num;
  *vv = ss;
}

void expArray(const float* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::exp(x[i]);
}

void expm1Array(const float* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::expm1(x[i]);
}

void tanhArray(const float* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::tanh(x[i]);
}

void sigmoidArray(const float* x, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = sigmoid(x[i]);
}

}  // namespace k3::kernels::scalar
