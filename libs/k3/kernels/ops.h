// Primitives of the K3 forward pass (spec §6.0), at the precision the spec
// fixes: RMSNorm and AttnRes sums in double, everything else in f32.
// Each call runs the AVX2 kernel when the CPU has it, else the scalar
// reference (ops_kernels.h); both are deterministic for a given length, so a
// token's result never depends on what else shares its chunk.
// Thread-safety: pure functions on caller-owned buffers; safe from any thread.
#pragma once

#include <cmath>
#include <cstddef>

namespace k3::kernels {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }

// out = x · 1/sqrt(mean(x²) + eps) · w, with the sum of squares in double.
// `out` may alias `x`.
void rmsNorm(const float* x, const float* w, size_t n, float eps, float* out);

// SiTU-GLU (spec §6.0): out[i] = b1·tanh(g/b1)·σ(g) · b2·tanh(u/b2).
// `out` may alias `gate`.
void situGlu(const float* gate, const float* up, size_t n, float b1, float b2, float* out);

// In-place softmax over n values (subtract the max, f32 exp, divide by the sum).
void softmax(float* x, size_t n);

float dot(const float* a, const float* b, size_t n);
// y += a·x
void axpy(float a, const float* x, float* y, size_t n);

// x[i] *= σ(g[i]) (the sigmoid output gates of KDA and MLA).
void mulSigmoid(float* x, const float* g, size_t n);

// vw = Σ v·w and vv = Σ v² in double (AttnRes scores, spec §6.2.1).
void dotAndSquaresF64(const float* v, const float* w, size_t n, double* vw, double* vv);

}  // namespace k3::kernels
