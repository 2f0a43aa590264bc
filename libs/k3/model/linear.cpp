#include "k3/model/linear.h"

#include <algorithm>

#include "k3/io/error.h"
#include "k3/io/stack_or_heap.h"

#include "k3/kernels/act_q8.h"
#include "k3/kernels/matvec.h"
#include "k3/model/parallel_work.h"

namespace k3::model {

namespace {

// Quantised activations on the stack up to this many values (every decode
// matvec of K3: widest input 33792, layer 0's dense down_proj), else on the
// heap once per call.
constexpr size_t kStackQ8Values = 36864;

void f32Rows(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  if (n == 1)
    kernels::matvec(w, X, Y, r0, r1);
  else
    kernels::matmul(w, X, n, Y, r0, r1);
}

void q8Rows(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y, size_t r0,
            size_t r1) {
  if (n == 1)
    kernels::matvecQ8(w, Xq, Xs, Y, r0, r1);
  else
    kernels::matmulQ8(w, Xq, Xs, n, Y, r0, r1);
}

// Storage for `values` quantised activations and their group scales: on the
// stack up to kStackQ8Values (every decode call), else on the heap.
class Q8Buffer {
 public:
  explicit Q8Buffer(size_t values) : q_(values), s_(values / kernels::kQ8Group) {}
  int8_t* q() { return q_.data(); }
  float* s() { return s_.data(); }

 private:
  StackOrHeap<int8_t, kStackQ8Values> q_;
  StackOrHeap<float, kStackQ8Values / kernels::kQ8Group> s_;
};

}  // namespace

bool usesInt8Activations(const WeightView& w) {
  return w.int8Activations && kernels::hasQ8Kernel(w.format) && w.cols % kernels::kQ8Group == 0;
}

void linearRows(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  if (!usesInt8Activations(w) || n == 0) return f32Rows(w, X, n, Y, r0, r1);
  Q8Buffer xq(n * w.cols);
  kernels::quantizeActivationsQ8_32(X, n * w.cols, xq.q(), xq.s());
  q8Rows(w, xq.q(), xq.s(), n, Y, r0, r1);
}

void linearRowsQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y, size_t r0,
                  size_t r1) {
  if (!usesInt8Activations(w)) fail(ErrorKind::Internal, "linearRowsQ8: the view does not take int8 activations");
  if (n > 0) q8Rows(w, Xq, Xs, n, Y, r0, r1);
}

void linear(ThreadPool& pool, const WeightView& w, const float* X, size_t n, float* Y) {
  linear(pool, {LinearJob{&w, X, Y}}, n);
}

void linear(ThreadPool& pool, std::initializer_list<LinearJob> jobs, size_t n) {
  // 16-row grains keep every thread's slice on whole cache lines of Y.
  constexpr size_t kGrain = 16;
  const size_t J = jobs.size();
  if (J > kMaxLinearJobs) fail(ErrorKind::Internal, "linear: ", J, " jobs > ", kMaxLinearJobs);
  if (n == 0 || J == 0) return;
  const LinearJob* job = jobs.begin();
  // Grain ranges of the jobs laid end to end: job j owns [first[j], first[j+1]).
  size_t first[kMaxLinearJobs + 1] = {0};
  uint64_t macs = 0;
  for (size_t j = 0; j < J; ++j) {
    first[j + 1] = first[j] + (job[j].w->rows + kGrain - 1) / kGrain;
    macs += uint64_t{job[j].w->rows} * job[j].w->cols * n;
  }

  // Quantised inputs, once per distinct X among the int8 jobs and before
  // the split: every thread reads the same Xq/Xs.
  const int8_t* xq[kMaxLinearJobs] = {};
  const float* xs[kMaxLinearJobs] = {};
  size_t need = 0;
  for (size_t j = 0; j < J; ++j)
    if (usesInt8Activations(*job[j].w)) need += n * job[j].w->cols;
  Q8Buffer buffer(need);
  int8_t* q = buffer.q();
  float* sc = buffer.s();
  for (size_t j = 0; j < J; ++j) {
    if (!usesInt8Activations(*job[j].w)) continue;
    for (size_t i = 0; i < j && !xq[j]; ++i)
      if (xq[i] && job[i].X == job[j].X && job[i].w->cols == job[j].w->cols) {
        xq[j] = xq[i];
        xs[j] = xs[i];
      }
    if (xq[j]) continue;
    const size_t values = n * job[j].w->cols;
    kernels::quantizeActivationsQ8_32(job[j].X, values, q, sc);
    xq[j] = q;
    xs[j] = sc;
    q += values;
    sc += values / kernels::kQ8Group;
  }

  pool.parallelFor(first[J], [&](size_t g0, size_t g1) {
    for (size_t j = 0; j < J; ++j) {
      const size_t b = std::max(g0, first[j]), e = std::min(g1, first[j + 1]);
      if (b >= e) continue;
      const WeightView& w = *job[j].w;
      const size_t r0 = (b - first[j]) * kGrain, r1 = std::min(w.rows, (e - first[j]) * kGrain);
      if (xq[j])
        q8Rows(w, xq[j], xs[j], n, job[j].Y, r0, r1);
      else
        f32Rows(w, job[j].X, n, job[j].Y, r0, r1);
    }
  }, 1, threadsForMacs(pool, macs));
}

}  // namespace k3::model
