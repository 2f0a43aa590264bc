// Integer-dot ("IDOT", spec 4) kernels: MXFP4 (and int4-g64, int8-row) weights x
// activations quantised to int8 per 32-element group. Doubled e2m1 values are exact int8
// {0,1,2,3,4,6,8,12} (and negatives), so each 32-group dot is an exact integer:
//   y[r] = sum_g (float)(sum_{i in g} E2M1x2[code]*xq[i]) * (2^(s_g-127)*0.5*xs_g)
// (the scalar reference, factor computed in that order; SIMD paths convert
// partial integer sums of a group and add them in another order). Approximate
// w.r.t. the f32 path (activation rounding): an option whose quality cost the
// runtime measures. Thread-safe; xq/xs are read-only inputs. The AVX2 kernel
// copies the activations into weight order once per call: on the stack up to
// 32 KiB (every matvec), once on the heap for bigger prefill batches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/codec/weight_view.h"
#include "k3/kernels/cpu_features.h"

namespace k3::kernels {

using codec::WeightFormat;
using codec::WeightView;

inline constexpr int kQ8Group = 32;

// n % 32 == 0. Per group g: xs[g] = max(max|x| / 127.0f, 1e-20f), inv = 1.0f/xs,
// xq = clamp(rint(x * inv), -127, 127). Every ISA gives the same bytes.
void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs);

// w.format must be MXFP4. xq: int8[cols], xs: float[cols/32]. Same row/vector
// conventions (and matvec == matmul bit-exactness per ISA) as matvec.h.
// (matvecQ8 / matmulQ8 below take int4-g64 weights too.)
void matvecMxfp4Q8(const WeightView& w, const int8_t* xq, const float* xs, float* y, size_t r0,
                   size_t r1);
// Xq: int8[n, cols], Xs: float[n, cols/32], Y: float[n, rows].
void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1);

// True for the formats matvecQ8 / matmulQ8 take.
bool hasQ8Kernel(WeightFormat f);

// The same for MXFP4, I4G64 or I8Row weights (I8Row: cols % 32 == 0). For
// int4-g64 each 32-group's integer dot of (nibble-8)*xq is scaled by s[r, g/2] * xs[g]:
//   y[r] = sum_g (float)(sum_{i in g} (nib-8)*xq[i]) * (s[r, g/2] * xs[g]).
// For int8 rows the row scale comes last (one multiply per row, as in matvec.h):
//   y[r] = s[r] * sum_g (float)(sum_{i in g} q[r,i]*xq[i]) * xs[g].
// Every group dot is exact in int32 (|q|, |xq| <= 127, even q = -128 fits).
void matvecQ8(const WeightView& w, const int8_t* xq, const float* xs, float* y, size_t r0,
              size_t r1);
void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1);

void quantizeActivationsQ8_32(kernels::Isa isa, const float* x, size_t n, int8_t* xq, float* xs);
void matvecQ8(kernels::Isa isa, const WeightView& w, const int8_t* xq, const float* xs, float* y,
              size_t r0, size_t r1);
void matmulQ8(kernels::Isa isa, const WeightView& w, const int8_t* Xq, const float* Xs, size_t n,
              float* Y, size_t r0, size_t r1);
void matvecMxfp4Q8(kernels::Isa isa, const WeightView& w, const int8_t* xq, const float* xs, float* y,
                   size_t r0, size_t r1);
void matmulMxfp4Q8(kernels::Isa isa, const WeightView& w, const int8_t* Xq, const float* Xs, size_t n,
                   float* Y, size_t r0, size_t r1);

}  // namespace k3::kernels
