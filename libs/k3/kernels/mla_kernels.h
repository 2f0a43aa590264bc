// The attention loops of absorbed MLA (spec §6.4) over the latent cache, for
// several query vectors (heads) at once so that each cache row is read once
// per token rather than once per head. Scalar reference in mla_kernels.cpp,
// AVX2 + FMA in mla_kernels_avx2.cpp, and the public functions that pick one
// (isa_dispatch.h), which mla_layer calls. Every output element has its own fixed accumulation order,
// so the results do not depend on how heads are grouped or split over threads.
// mlaWeightedLatent also absorbs a head's queries through its key rows (the
// same sum: rows for the cache, the tokens' q_nope for the probabilities);
// the *I8 versions read int8-row kv_b rows directly, with the same bits as
// dequantizing them first.
// Thread-safety: pure functions on caller-owned buffers; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

#define K3_MLA_KERNELS                                                                          \
  /* scores[j·scoreStride + s] = (qa_j·L_s + qr_j·R_s)·scale for query j < nq and position s < len;   \
     qa_j = qa + j·qaStride (kvr values), qr_j = qr + j·qrStride (rope values), L_s = L + s·kvr,      \
     R_s = R + s·rope. */                                                                             \
  void mlaScores(const float* qa, size_t qaStride, const float* qr, size_t qrStride, size_t nq,        \
                 const float* L, const float* R, size_t len, size_t kvr, size_t rope, float scale,      \
                 float* scores, size_t scoreStride);                                                  \
  /* cl_j = Σ_{s<len} p_j[s]·L_s, summed in position order; p_j = p + j·pStride,                     \
     cl_j = cl + j·clStride (overwritten). */                                                         \
  void mlaWeightedLatent(const float* p, size_t pStride, size_t nq, const float* L, size_t len, size_t kvr, \
                         float* cl, size_t clStride);                                                 \
  /* mlaWeightedLatent over int8 rows dequantized in registers: L_s = float(W_s)·scales[s] (the bits \
     codec::dequantizeInt8Rows writes), W_s = W + s·kvr; no f32 rows in memory. */                     \
  void mlaWeightedLatentI8(const float* p, size_t pStride, size_t nq, const int8_t* W, const float* scales, \
                           size_t len, size_t kvr, float* cl, size_t clStride);                       \
  /* out[r] = dot(float(W_r)·scales[r], cl, kvr) for r < rows: the bits of dot() (ops_kernels.h) on  \
     the dequantized row. */                                                                          \
  void mlaRowDotsI8(const int8_t* W, const float* scales, size_t rows, size_t kvr, const float* cl, float* out);

namespace scalar { K3_MLA_KERNELS }
namespace avx2 { K3_MLA_KERNELS }
K3_MLA_KERNELS  // the public ones: the path isa_dispatch.h picks

#undef K3_MLA_KERNELS

}  // namespace k3::kernels
