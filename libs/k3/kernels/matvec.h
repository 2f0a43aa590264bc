// Weight x activation kernels on the stored formats (decode and prefill).
//
// matvec: y[r] = sum_i W[r,i] x[i] for r in [r0, r1). Single-threaded over the
// row range; the caller's thread pool splits rows. y has `rows` entries and
// only [r0, r1) is written.
// matmul: X is [n, cols] row-major, Y is [n, rows] row-major; rows [r0, r1) for
// each of the n vectors. Each weight row is read from memory once per call
// (blocks of rows stay in L2 while the vectors pass over them) and, on a given
// ISA, every Y[v, r] has exactly the bits matvec gives for X[v, :]: both run
// the same per-(row, vector) accumulation sequence (chunked prefill must equal
// token-at-a-time bit for bit).
//
// Accumulation (the scalar reference; SIMD paths differ only in summation order):
//   F32/BF16: sum_i x[i]*W[r,i]
//   I8Row:    s[r] * sum_i x[i]*q[r,i]                      (spec 5.3)
//   I4G64:    sum_g s[r,g] * sum_{i in g} x[i]*(nib-8)      (spec 5.4)
//   MXFP4:    sum_g 2^(s-127) * sum_{i in g} x[i]*E2M1[code] (spec 4; AVX paths
//             multiply x by the exact dequantised weight instead)
// MXFP4 scales use the engine convention of mxfp4.h (s=0 -> 0, s=255 -> inf).
//
// All functions are thread-safe (no shared mutable state; the ISA is chosen
// once per process, see cpu_features.h) and never allocate.
#pragma once

#include <cstddef>

#include "k3/codec/weight_view.h"
#include "k3/kernels/cpu_features.h"

namespace k3::kernels {

using codec::WeightView;

void matvec(const WeightView& w, const float* x, float* y, size_t r0, size_t r1);
void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1);

// Per-ISA entry points (tests, benchmarks). Throw Unsupported if the CPU lacks it.
void matvec(kernels::Isa isa, const WeightView& w, const float* x, float* y, size_t r0, size_t r1);
void matmul(kernels::Isa isa, const WeightView& w, const float* X, size_t n, float* Y, size_t r0,
            size_t r1);

}  // namespace k3::kernels
