// The K3 forward pass (spec §6), read top to bottom in Forward::run.
//
// A chunk of tokens goes through the model layer by layer ("layer-major"):
// every projection is one batched matmul over the chunk, while recurrences,
// cache appends and the AttnRes bookkeeping run per token in order. A chunk of
// one token is decode; the results do not depend on the chunk size.
// Thread-safety: not thread-safe; one per Session (its layers' scratch). The
// ModelWeights it reads may be shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "k3/io/thread_pool.h"
#include "k3/model/attn_res.h"
#include "k3/model/dense_mlp.h"
#include "k3/model/expert_residency.h"
#include "k3/model/kda_layer.h"
#include "k3/model/mla_layer.h"
#include "k3/model/model_weights.h"
#include "k3/model/moe_layer.h"
#include "k3/model/phase_times.h"

namespace k3::model {

// Everything carried from one token to the next: KDA recurrent state and conv
// windows, and the MLA latent cache. Indexed by layer (unused side empty).
struct ModelState {
  std::vector<KdaState> kda;
  std::vector<MlaCache> mla;
  size_t position = 0;  // tokens consumed
  ModelState(const ModelConfig& c, size_t maxContext);
  void reset();
};

class Forward {
 public:
  // expertTopP: the MoE layers' expert top-p (1 = off, expert_top_p.h).
  Forward(const ModelWeights& w, size_t maxChunk, size_t threads, size_t maxContext, float expertTopP = 1.0f);

  size_t maxChunk() const { return maxChunk_; }

  // Runs ids[0..n) (n ≤ maxChunk) at state.position and advances it. Writes
  // logits for the positions asked for: all n rows into `logits` ([n × V]) when
  // allPositions, else only the last position's row ([V]); none if null.
  // Adds the time of each phase to `times` unless null.
  void run(ModelState& state, const int32_t* ids, size_t n, bool allPositions, float* logits,
           ThreadPool& pool, ExpertResidency& residency, PhaseTimes* times = nullptr);

 private:
  const ModelWeights& w_;
  const ModelConfig& c_;
  size_t D_, maxChunk_;
  KdaLayer kda_;
  MlaLayer mla_;
  DenseMlp dense_;
  MoeLayer moe_;
  std::vector<AttnResState> attnRes_;  // one per token of the chunk
  std::vector<float> prefix_;          // [chunk × D] running in-block sum (= hidden)
  std::vector<float> mixed_;           // [chunk × D] AttnRes mix, then its RMSNorm
  std::vector<float> delta_;           // [chunk × D] attention / MLP output
};

}  // namespace k3::model
