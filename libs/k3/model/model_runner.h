// The machinery that runs batches of rows through the model: the Forward (its
// scratch for maxRows rows), the thread pool it forks over and the routed
// experts' residency. It holds no sequence: a Session runs batches of one
// over its own SequenceState, the server's scheduler batches the rows of
// every sequence in flight.
// Thread-safety: not thread-safe; used from one thread at a time (it owns the
// pool its run() forks over). Many runners may share one ModelWeights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "k3/io/thread_pool.h"
#include "k3/model/expert_residency.h"
#include "k3/model/forward.h"
#include "k3/model/model_weights.h"
#include "k3/model/phase_times.h"

namespace k3::model {

struct RunnerOptions {
  size_t threads = 0;          // 0: all cores
  size_t maxRows = 128;        // rows per batch (the prefill chunk)
  size_t maxContext = 4096;    // the largest sequence capacity run
  uint64_t expertBudget = 0;   // bytes of routed experts kept resident; 0 = no bound
  float expertTopP = 1.0f;     // expert_top_p.h: in (0, 1]; 1 = off
};

class ModelRunner {
 public:
  ModelRunner(const ModelWeights& w, const RunnerOptions& o);

  const ModelWeights& weights() const { return w_; }
  size_t maxRows() const { return forward_.maxChunk(); }
  // Forward::run on this runner's pool and residency.
  void run(std::span<const SequenceRows> batch, float* logits, PhaseTimes* times = nullptr) {
    forward_.run(batch, logits, pool_, *residency_, times);
  }
  const ExpertResidency& residency() const { return *residency_; }

 private:
  const ModelWeights& w_;
  ThreadPool pool_;
  Forward forward_;
  std::unique_ptr<ExpertResidency> residency_;
};

// Experts kept per token and MoE layer over what `phases` counted (top-k
// unless expert top-p dropped some; 0 before any), and the routed-expert
// bytes that many experts per MoE layer hold: what one decode step reads.
double expertsKeptPerTokenLayer(const PhaseTimes& phases);
double expertBytesPerToken(const ModelWeights& w, const PhaseTimes& phases);

}  // namespace k3::model
