// The dense SiTU-GLU MLP of the first `first_k_dense_replace` layers (spec §6.5).
// Thread-safety: not thread-safe (scratch for one chunk); one per Forward.
// forward() forks over the ThreadPool it is given.
#pragma once

#include <cstddef>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/io/thread_pool.h"
#include "k3/model/model_weights.h"

namespace k3::model {

class DenseMlp {
 public:
  DenseMlp(const ModelConfig& c, size_t maxChunk);
  // out[n × D] = W_down · SiTU(W_gate x, W_up x)
  void forward(const DenseMlpWeights& w, const float* x, size_t n, float* out, ThreadPool& pool);

 private:
  size_t inner_;
  float b1_, b2_;
  std::vector<float> gate_, up_;
};

}  // namespace k3::model
