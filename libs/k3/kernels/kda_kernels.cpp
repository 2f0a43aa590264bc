// Scalar reference of the KDA inner loops (kda_kernels.h): the spec's
// arithmetic in its plainest order.
#include <algorithm>
#include <cmath>

#include "k3/kernels/isa_dispatch.h"
#include "k3/kernels/kda_kernels.h"
#include "k3/kernels/ops.h"
#include "k3/kernels/ops_kernels.h"

namespace k3::kernels::scalar {

void shortConvSilu(float* win, const float* taps, float* x, size_t channels, size_t K) {
  for (size_t c = 0; c < channels; ++c) {
    float* w = win + c * K;
    std::copy(w + 1, w + K, w);
    w[K - 1] = x[c];
    const float* tap = taps + c * K;
    float acc = 0.0f;
    for (size_t j = 0; j < K; ++j) acc += tap[j] * w[j];
    x[c] = silu(acc);
  }
}

void normalizeQk(const float* q, const float* k, size_t d, float* qn, float* kn) {
  float qq = 0.0f, kk = 0.0f;
  for (size_t j = 0; j < d; ++j) {
    qq += q[j] * q[j];
    kk += k[j] * k[j];
  }
  const float qScale = 1.0f / std::sqrt(static_cast<float>(d));
  const float qInv = 1.0f / std::sqrt(qq + 1e-6f), kInv = 1.0f / std::sqrt(kk + 1e-6f);
  for (size_t j = 0; j < d; ++j) {
    qn[j] = q[j] * qInv * qScale;
    kn[j] = k[j] * kInv;
  }
}

void decay(const float* f, const float* dtBias, float aExp, float gMin, size_t d, float* alpha) {
  for (size_t j = 0; j < d; ++j) alpha[j] = std::exp(gMin * sigmoid(aExp * (f[j] + dtBias[j])));
}

void deltaRule(float* S, size_t d, const float* alpha, const float* k, const float* q, const float* v, float beta,
               float* o) {
  float kS[kKdaMaxHeadDim];  // d ≤ kKdaMaxHeadDim (checked by KdaLayer)
  std::fill(kS, kS + d, 0.0f);
  for (size_t a = 0; a < d; ++a) {
    float* row = S + a * d;
    for (size_t j = 0; j < d; ++j) row[j] *= alpha[a];
    scalar::axpy(k[a], row, kS, d);
  }
  for (size_t j = 0; j < d; ++j) kS[j] = beta * (v[j] - kS[j]);  // now δ
  std::fill(o, o + d, 0.0f);
  for (size_t a = 0; a < d; ++a) {
    float* row = S + a * d;
    scalar::axpy(k[a], kS, row, d);
    scalar::axpy(q[a], row, o, d);
  }
}

void deltaRuleTokens(float* S, size_t d, size_t n, const float* alpha, const float* k, const float* q,
                     const float* v, size_t stride, const float* beta, float* o) {
  for (size_t t = 0; t < n; ++t)
    deltaRule(S, d, alpha + t * d, k + t * d, q + t * d, v + t * stride, beta[t], o + t * stride);
}

}  // namespace k3::kernels::scalar

namespace k3::kernels {

void shortConvSilu(float* win, const float* taps, float* x, size_t channels, size_t K) {
  K3_KERNEL(shortConvSilu)(win, taps, x, channels, K);
}
void normalizeQk(const float* q, const float* k, size_t d, float* qn, float* kn) {
  K3_KERNEL(normalizeQk)(q, k, d, qn, kn);
}
void decay(const float* f, const float* dtBias, float aExp, float gMin, size_t d, float* alpha) {
  K3_KERNEL(decay)(f, dtBias, aExp, gMin, d, alpha);
}
void deltaRule(float* S, size_t d, const float* alpha, const float* k, const float* q, const float* v, float beta,
               float* o) {
  K3_KERNEL(deltaRule)(S, d, alpha, k, q, v, beta, o);
}
void deltaRuleTokens(float* S, size_t d, size_t n, const float* alpha, const float* k, const float* q, const float* v,
                     size_t stride, const float* beta, float* o) {
  K3_KERNEL(deltaRuleTokens)(S, d, n, alpha, k, q, v, stride, beta, o);
}

}  // namespace k3::kernels
