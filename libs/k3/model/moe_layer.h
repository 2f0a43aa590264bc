// Stable LatentMoE (spec §6.6): a sigmoid router with a selection-only
// correction bias picks top-k experts per token; the experts run in a smaller
// latent space (down-projected input, RMS-normed aggregate, up-projection),
// plus fused shared experts at full width. All MLPs are SiTU-GLU.
//
// A chunk runs each unique expert once over all the tokens routed to it, so
// every expert's weights are streamed once per chunk. The pool's threads take
// whole experts (one parallel region per layer, not one per matrix) — under
// --expert-gb in the order their reads finish; each
// token then adds its expert outputs in ascending expert id, whatever the
// chunk size or thread count, which keeps chunked prefill bit-identical to
// token-at-a-time.
//
// With expert top-p (expertTopP < 1, expert_top_p.h) a token keeps only the
// first kept_[t] of its k routed experts; every loop below then runs over
// those, and with P = 1 over all k exactly as without it.
// Thread-safety: not thread-safe (scratch for one chunk); one per Forward.
// forward() forks over the pool it is given and takes experts from one
// ExpertResidency.
#pragma once

#include <cstddef>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/io/thread_pool.h"
#include "k3/model/expert_residency.h"
#include "k3/model/model_weights.h"
#include "k3/model/phase_times.h"

namespace k3::model {

// Top-k selection of one token (spec §6.6 steps 1–3): ids in selection order,
// weights = raw sigmoid scores renormalised over the chosen ones.
void routeToken(const float* routerLogits, const float* scoreBias, int numExperts, int topK, int* ids,
                float* weights, float* scratchScores);

class MoeLayer {
 public:
  // int8Activations: the routed experts take int8 activations (WeightOptions);
  // each token's latent row is then quantised once, not once per expert and
  // matrix. threads: at least the size of the pools forward() is given.
  // expertTopP: in (0, 1]; 1 keeps every routed expert (spec §6.6 as is).
  MoeLayer(const ModelConfig& c, size_t maxChunk, size_t threads, bool int8Activations, float expertTopP = 1.0f);

  // x: [n × D] normed inputs, out: [n × D]. Experts are reached through
  // `residency`. Adds its phases' time to `times` unless null.
  void forward(const MoeWeights& w, int layer, const float* x, size_t n, float* out, ThreadPool& pool,
               ExpertResidency& residency, PhaseTimes* times = nullptr);

 private:
  // The steps of forward(), in order. withRouter: the router's product joins
  // the fork-join of x's other projections.
  void projectInputs(const MoeWeights& w, const float* x, size_t n, ThreadPool& pool, bool withRouter);
  void route(const MoeWeights& w, size_t n, ThreadPool& pool);  // topIds_, topW_, kept_
  size_t listExperts(size_t n);                                   // unique_, slot_, rowCount_; returns the pairs
  void gatherPairs(size_t n, ThreadPool& pool);                   // rows by expert, latent rows, shared SiTU-GLU
  void runExperts(ThreadPool& pool, ExpertResidency& residency);  // y2_, every expert the residency hands out
  void combine(const MoeWeights& w, size_t n, float* out, ThreadPool& pool);
  // Expert unique_[u] over its gathered rows [rowBegin_[u], rowBegin_[u+1]), on pool thread tid.
  void runExpert(const ExpertWeights& e, size_t u, size_t tid);

  size_t D_, E_, k_, lat_, inter_, ish_;
  float b1_, b2_, eps_;
  bool q8_;  // experts' w1/w3 read zq_/zs_ rows instead of zg_
  float topP_;
  std::vector<float> router_, scores_, topW_, z_, u_;
  std::vector<int> topIds_;                  // [n × k]: token t's experts; the first kept_[t] are used
  std::vector<int> kept_;                    // [n]: experts token t keeps (k unless expert top-p)
  std::vector<int> unique_;                  // experts used by the chunk, ascending
  std::vector<int> slot_;                    // [E]: position in unique_, or -1
  std::vector<size_t> rowCount_;             // [E]: tokens routed to unique_[u]
  // Token-expert pairs grouped by expert: rows [rowBegin_[u], rowBegin_[u+1])
  // belong to unique_[u].
  std::vector<size_t> rowBegin_, rowCursor_;
  std::vector<float> rowWeight_;
  std::vector<size_t> pairOf_;               // [n × k]: token t's pairs, ascending after the gather
  std::vector<float> zg_, y2_;               // [pairs × latent]
  // Per pool thread [maxChunk × inter] (an expert has at most one row per
  // token): w1 and w3's outputs live only inside runExpert, so each thread
  // writes the same few cache lines expert after expert.
  std::vector<float> h1_, h3_;
  size_t hPerThread_;
  std::vector<int8_t> zq_;                   // q8_: [pairs × latent] the latent rows quantised
  std::vector<float> zs_;                    // q8_: [pairs × latent / 32] their group scales
  std::vector<float> sg_, su_, sy_;          // shared experts
};

}  // namespace k3::model
