// The one way the model multiplies by a weight: Y = X·Wᵀ for n activation rows,
// with the output rows split over the pool. The kernels themselves live in
// k3::quant; batched and single-vector calls give the same bits per vector, so
// a chunk of n tokens computes exactly what n single-token calls compute.
//
// A view with `int8Activations` set (ModelWeights, --activations int8) whose
// format has IDOT kernels multiplies with X quantised to int8 per 32 values
// (quant/act_q8.h): X is quantised once per call, then the integer-dot kernels
// run. Still deterministic and chunk-independent (quantisation is per vector).
// Decode (n·cols ≤ 36864) keeps the quantised X on the stack; a prefill batch
// larger than that allocates it once per call.
// Thread-safety: stateless (each call's quantised X is its own scratch);
// linear() forks over the pool it is given, linearRows runs on the calling
// thread.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "k3/codec/weight_view.h"
#include "k3/io/thread_pool.h"
#include "k3/model/parallel_work.h"

namespace k3::model {

using codec::WeightView;

// X: [n × w.cols], Y: [n × w.rows] (row-major, contiguous).
void linear(ThreadPool& pool, const WeightView& w, const float* X, size_t n, float* Y);

// The same on one thread over output rows [r0, r1) (Y keeps full row stride).
void linearRows(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1);

// The same with X already quantised (kernels::quantizeActivationsQ8_32: Xq
// [n × w.cols], Xs [n × w.cols / 32]); usesInt8Activations(w) must hold.
// The bits of linearRows on the unquantised X: quantisation is per vector,
// so a caller that reuses one vector's quantisation in several products (a
// token's latent row, once for each of its experts) changes nothing.
void linearRowsQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y, size_t r0,
                  size_t r1);

// Several independent products in one fork-join: Y_j = X_j·W_jᵀ for every
// job, with the rows of all the weights split over the pool as one range
// (a decode step is bound by fork-join hand-offs as much as by bytes, and the
// projections that read the same input can share one). Each Y_j has exactly
// the bits linear(pool, *w, X, n, Y) gives. At most kMaxLinearJobs jobs.
struct LinearJob {
  const WeightView* w;
  const float* X;  // [n × w->cols]
  float* Y;        // [n × w->rows]
};
inline constexpr size_t kMaxLinearJobs = 8;
void linear(ThreadPool& pool, std::initializer_list<LinearJob> jobs, size_t n);

// True when linear() multiplies `w` with int8-quantised activations.
bool usesInt8Activations(const WeightView& w);

}  // namespace k3::model
