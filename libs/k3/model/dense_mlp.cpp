#include "k3/model/dense_mlp.h"

#include "k3/model/linear.h"
#include "k3/kernels/ops.h"

namespace k3::model {

DenseMlp::DenseMlp(const ModelConfig& c, size_t maxChunk)
    : inner_(c.intermediateSize), b1_(c.situBeta), b2_(c.situLinearBeta),
      gate_(maxChunk * inner_), up_(maxChunk * inner_) {}

void DenseMlp::forward(const DenseMlpWeights& w, const float* x, size_t n, float* out, ThreadPool& pool) {
  linear(pool, {LinearJob{&w.gate, x, gate_.data()}, LinearJob{&w.up, x, up_.data()}}, n);
  kernels::situGlu(gate_.data(), up_.data(), n * inner_, b1_, b2_, gate_.data());
  linear(pool, w.down, gate_.data(), n, out);
}

}  // namespace k3::model
