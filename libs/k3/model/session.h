// Session: one sequence's state (SequenceState) plus the machinery to feed it
// (a ModelRunner: the Forward, the thread pool, expert residency) and
// counters — a batch of one, on the same path as the server's batches.
// feed() splits long inputs into chunks (chunked prefill); a chunk of one
// token is a decode step. No allocation happens per token.
// Thread-safety: not thread-safe; one per conversation, used from one thread at
// a time (it owns the pool its feed() forks over). Many Sessions may share one
// ModelWeights.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "k3/model/expert_residency.h"
#include "k3/model/model_runner.h"
#include "k3/model/model_weights.h"
#include "k3/model/phase_times.h"
#include "k3/model/sequence_state.h"

namespace k3::model {

struct SessionOptions {
  size_t threads = 0;          // 0: all cores
  // Prefill chunk (tokens per layer-major pass). A chunk reads each of its
  // unique experts once, so larger chunks read fewer expert bytes per token;
  // 128 measured best on medium at 128 and 512 prompt tokens (×1.08 and
  // ×1.07 over 64; 256 ×1.03). Scratch grows ~2.2 MB per token for K3.
  size_t chunk = 128;
  size_t maxContext = 4096;    // MLA cache capacity (positions)
  uint64_t expertBudget = 0;   // bytes of routed experts kept resident; 0 = no bound
  // Expert top-p (expert_top_p.h): in (0, 1]; 1 = every routed expert (off).
  float expertTopP = 1.0f;
};

struct SessionStats {
  uint64_t prefillTokens = 0, decodeTokens = 0;
  uint64_t prefillPasses = 0;  // layer-major passes (chunks) the prefill tokens took
  double prefillSeconds = 0, decodeSeconds = 0;
  PhaseTimes prefillPhases, decodePhases;  // where those seconds went
};

class Session {
 public:
  Session(const ModelWeights& w, const SessionOptions& opts);

  const ModelWeights& weights() const { return w_; }
  const ModelConfig& config() const { return w_.config(); }
  size_t vocabSize() const { return static_cast<size_t>(w_.config().vocabSize); }
  size_t chunk() const { return runner_.maxRows(); }
  size_t capacity() const { return opts_.maxContext; }  // positions the state can hold (--ctx)

  // Forgets everything: KDA state, conv windows, MLA cache, token history.
  void reset();
  // Tokens consumed so far (what the state holds).
  const std::vector<int32_t>& history() const { return state_.tokens; }
  size_t position() const { return state_.position(); }
  // The state itself (what snapshotOf / restoreTo work on).
  const SequenceState& state() const { return state_; }
  SequenceState& state() { return state_; }

  // Feeds tokens. Afterwards lastLogits() holds the logits of the last one.
  // With `allLogits` (size n × V) every position's logits are written too.
  // `cancel`, when given, is checked before each chunk: once set, feed stops
  // and returns false; history() then holds the tokens consumed so far and
  // lastLogits() is stale (the caller restores or resets before generating).
  bool feed(std::span<const int32_t> ids, float* allLogits = nullptr,
            const std::atomic<bool>* cancel = nullptr);
  const float* lastLogits() const { return state_.lastLogits.data(); }

  // snapshotOf(state()) / restoreTo(state(), snap) (sequence_state.h).
  StateSnapshot snapshot() const { return snapshotOf(state_); }
  void restore(const StateSnapshot& snap) { restoreTo(state_, snap); }

  const SessionStats& stats() const { return stats_; }
  // Prefill and decode together: routed experts run per token and MoE layer
  // (top-k unless expert top-p dropped some; 0 before any), and the routed
  // expert bytes that many experts per MoE layer hold — what one decode step
  // reads (a prefill chunk shares experts between its tokens).
  double expertsKeptPerTokenLayer() const;
  double expertBytesPerToken() const;
  const ExpertResidency& residency() const { return runner_.residency(); }

 private:
  const ModelWeights& w_;
  SessionOptions opts_;
  ModelRunner runner_;
  SequenceState state_;
  SessionStats stats_;
};

}  // namespace k3::model
