// The per-token, per-head inner loops of KDA (spec §6.3): a scalar reference
// (kda_kernels.cpp), an AVX2 + FMA version (kda_kernels_avx2.cpp) and the
// public functions that pick one (isa_dispatch.h), which kda_layer calls. Each works on
// one head's slice only, so results do not depend on how heads are split over
// threads or tokens over chunks.
// Thread-safety: pure functions on caller-owned buffers; safe from any thread.
#pragma once

#include <cstddef>

namespace k3::kernels {

// deltaRule keeps a [d] vector on the stack.
inline constexpr size_t kKdaMaxHeadDim = 512;

#define K3_KDA_KERNELS                                                                        \
  /* Causal short conv of `channels` channels: each window win[c·K … c·K+K−1]                       \
     (oldest first) shifts left and takes x[c]; then x[c] = SiLU(Σ_j taps[c·K+j]·win[c·K+j]). */     \
  void shortConvSilu(float* win, const float* taps, float* x, size_t channels, size_t K);            \
  /* qn = q/sqrt(Σq²+1e-6)·d^−½, kn = k/sqrt(Σk²+1e-6) (sums in f32). */                              \
  void normalizeQk(const float* q, const float* k, size_t d, float* qn, float* kn);                  \
  /* alpha[j] = exp(gMin·σ(aExp·(f[j] + dtBias[j]))), the per-key-channel decay. */                  \
  void decay(const float* f, const float* dtBias, float aExp, float gMin, size_t d, float* alpha);   \
  /* One token of the gated delta rule on S[d key][d value]: S ← Diag(α)S; kS = kᵀS;              \
     S ← S + k·(β(v − kS))ᵀ; o = qᵀS (spec §6.3 steps 1–5). */                                       \
  void deltaRule(float* S, size_t d, const float* alpha, const float* k, const float* q, const float* v, \
                 float beta, float* o);                                                               \
  /* n tokens of deltaRule in order, token t with alpha/k/q + t·d, v/o + t·stride, beta[t]: the       \
     bits of n deltaRule calls (the AVX2 one runs each column block through all n tokens while it    \
     stays in L1, in n + 1 passes; S's columns are independent). */                                   \
  void deltaRuleTokens(float* S, size_t d, size_t n, const float* alpha, const float* k, const float* q,  \
                       const float* v, size_t stride, const float* beta, float* o);

namespace scalar { K3_KDA_KERNELS }
namespace avx2 { K3_KDA_KERNELS }
K3_KDA_KERNELS  // the public ones: the path isa_dispatch.h picks

#undef K3_KDA_KERNELS

}  // namespace k3::kernels
