// Scalar reference of the MLA attention loops (mla_kernels.h).
#include <algorithm>

#include "k3/kernels/isa_dispatch.h"
#include "k3/kernels/mla_kernels.h"
#include "k3/kernels/ops_kernels.h"

namespace k3::kernels::scalar {

void mlaScores(const float* qa, size_t qaStride, const float* qr, size_t qrStride, size_t nq, const float* L,
               const float* R, size_t len, size_t kvr, size_t rope, float scale, float* scores, size_t scoreStride) {
  for (size_t j = 0; j < nq; ++j)
    for (size_t s = 0; s < len; ++s)
      scores[j * scoreStride + s] =
          (dot(qa + j * qaStride, L + s * kvr, kvr) + dot(qr + j * qrStride, R + s * rope, rope)) * scale;
}

void mlaWeightedLatent(const float* p, size_t pStride, size_t nq, const float* L, size_t len, size_t kvr, float* cl,
                       size_t clStride) {
  for (size_t j = 0; j < nq; ++j) {
    float* c = cl + j * clStride;
    std::fill(c, c + kvr, 0.0f);
    for (size_t s = 0; s < len; ++s) axpy(p[j * pStride + s], L + s * kvr, c, kvr);
  }
}

}  // namespace k3::kernels::scalar

namespace k3::kernels {

void mlaScores(const float* qa, size_t qaStride, const float* qr, size_t qrStride, size_t nq, const float* L,
               const float* R, size_t len, size_t kvr, size_t rope, float scale, float* scores, size_t scoreStride) {
  K3_KERNEL(mlaScores)(qa, qaStride, qr, qrStride, nq, L, R, len, kvr, rope, scale, scores, scoreStride);
}
void mlaWeightedLatent(const float* p, size_t pStride, size_t nq, const float* L, size_t len, size_t kvr, float* cl,
                       size_t clStride) {
  K3_KERNEL(mlaWeightedLatent)(p, pStride, nq, L, len, kvr, cl, clStride);
}

}  // namespace k3::kernels
