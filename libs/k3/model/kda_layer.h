// Kimi Delta Attention (spec §6.3): a gated delta-rule linear attention with a
// causal depthwise short convolution in front of q/k/v. Its whole memory of
// the past is a fixed-size state per layer (KdaState), so decode cost does not
// grow with the context.
// Thread-safety: a KdaLayer holds one batch's scratch and a KdaState one
// sequence's memory: neither is thread-safe; one layer per Forward, which forks
// over its ThreadPool.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/io/thread_pool.h"
#include "k3/model/model_weights.h"

namespace k3::model {

struct KdaState {
  std::vector<float> S;     // [Hk][d key][d value], zero at start
  std::vector<float> conv;  // [3 streams q,k,v][P][K] pre-conv inputs, oldest first
  KdaState() = default;
  explicit KdaState(const ModelConfig& c);
  void reset();
};

// One sequence's rows of a batch: [row0, row0 + n), applied to `state` in order.
struct KdaRows {
  KdaState* state;
  size_t row0, n;
};

class KdaLayer {
 public:
  // Scratch for chunks of up to `maxChunk` tokens and `threads` pool threads.
  KdaLayer(const ModelConfig& c, size_t maxChunk, size_t threads);

  // x: [n × D] (already RMS-normed), out: [n × D]. The projections are
  // batched over all n rows; each sequence's rows are applied to its state in
  // order (`seqs` covers the rows, ascending).
  void forward(const KdaWeights& w, std::span<const KdaRows> seqs, const float* x, size_t n, float* out,
               ThreadPool& pool);

 private:
  // Conv, decay, delta-rule update, norm and gate for heads [h0, h1) of one sequence's rows.
  void heads(const KdaWeights& w, const KdaRows& seq, size_t h0, size_t h1, float* tmp);
  // One thread's scratch for n tokens: decay, normalised q and k ([n·d] each), β [n].
  size_t tmpPerThread(size_t n) const { return n * (3 * d_ + 1); }

  size_t maxChunk_, D_, P_, d_, H_, K_;
  float eps_, gMin_;
  std::vector<float> q_, k_, v_, g_, fa_, f_, b_, o_;  // chunk buffers
  std::vector<float> tmp_;                             // per-thread tmpPerThread(maxChunk)
};

}  // namespace k3::model
