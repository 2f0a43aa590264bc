#include "k3/model/linear.h"

#include "k3/quant/matvec.h"

namespace k3::model {

void linearRows(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  if (n == 1)
    quant::matvec(w, X, Y, r0, r1);
  else
    quant::matmul(w, X, n, Y, r0, r1);
}

void linear(ThreadPool& pool, const WeightView& w, const float* X, size_t n, float* Y) {
  // 16-row grains keep every thread's slice on whole cache lines of Y.
  pool.parallelFor(w.rows, [&](size_t r0, size_t r1) { linearRows(w, X, n, Y, r0, r1); }, 16);
}

}  // namespace k3::model
