// Scalar reference of the MLA attention loops (mla_kernels.h).
#include <algorithm>
#include <vector>

#include "k3/codec/quantize.h"
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

void mlaWeightedLatentI8(const float* p, size_t pStride, size_t nq, const int8_t* W, const float* scales, size_t len,
                         size_t kvr, float* cl, size_t clStride) {
  std::vector<float> L(len * kvr);
  codec::dequantizeInt8Rows(Isa::Scalar, W, scales, len, kvr, L.data());
  mlaWeightedLatent(p, pStride, nq, L.data(), len, kvr, cl, clStride);
}

void mlaRowDotsI8(const int8_t* W, const float* scales, size_t rows, size_t kvr, const float* cl, float* out) {
  std::vector<float> row(kvr);
  for (size_t r = 0; r < rows; ++r) {
    codec::dequantizeInt8Rows(Isa::Scalar, W + r * kvr, scales + r, 1, kvr, row.data());
    out[r] = dot(row.data(), cl, kvr);
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

void mlaWeightedLatentI8(const float* p, size_t pStride, size_t nq, const int8_t* W, const float* scales, size_t len,
                         size_t kvr, float* cl, size_t clStride) {
  K3_KERNEL(mlaWeightedLatentI8)(p, pStride, nq, W, scales, len, kvr, cl, clStride);
}
void mlaRowDotsI8(const int8_t* W, const float* scales, size_t rows, size_t kvr, const float* cl, float* out) {
  K3_KERNEL(mlaRowDotsI8)(W, scales, rows, kvr, cl, out);
}

}  // namespace k3::kernels
