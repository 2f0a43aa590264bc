// Wall time of the forward pass by phase, summed over a run: where prefill
// and decode spend their time (k3-run --json, scripts/bench_run). A phase is
// timed on the calling thread around its fork-joins, so the phases of one
// pass add up to the pass (up to the few statements between them).
// Thread-safety: not thread-safe: a PhaseTimes is added to by the one thread
// that forks (PhaseClock lives there).
#pragma once

#include <chrono>
#include <cstddef>

namespace k3::model {

enum class Phase {
  kAttnResMix,   // the AttnRes mixes and RMSNorms before attention and MLP, the residual add
  kKda,          // Kimi Delta Attention layers
  kMla,          // MLA layers
  kMoeInput,     // router, latent down-projection, shared experts' gate and up
  kMoeRouting,   // top-k per token, grouping the token-expert pairs
  kMoeExperts,   // the routed experts
  kMoeCombine,   // weighted sum, latent norm and up-projection, shared down-projection
  kDenseMlp,     // dense MLP layers
  kHead,         // final mix, norm and lm_head
  kCount
};
inline constexpr size_t kPhaseCount = static_cast<size_t>(Phase::kCount);

// The snake_case name used in reports.
const char* phaseName(Phase p);

struct PhaseTimes {
  double seconds[kPhaseCount] = {};
  // Routed-expert weight bytes the kMoeExperts phase used: each chunk's
  // unique experts once per MoE layer. Over that phase's seconds, the rate
  // the experts' weights streamed at, to set against the memory bandwidth.
  double expertBytes = 0;
  // Token-expert pairs the routed experts ran, over the token rows the MoE
  // layers took (one per token and MoE layer): the mean experts kept, top-k
  // unless expert top-p dropped some.
  double expertPairs = 0, moeRows = 0;
  double& operator[](Phase p) { return seconds[static_cast<size_t>(p)]; }
  double operator[](Phase p) const { return seconds[static_cast<size_t>(p)]; }
  double total() const;
};

// Adds the time since the previous lap (or construction) to a phase of
// `times`; with no `times` it does nothing, not even read the clock.
class PhaseClock {
 public:
  explicit PhaseClock(PhaseTimes* times) : times_(times) {
    if (times_) last_ = std::chrono::steady_clock::now();
  }
  void lap(Phase p) {
    if (!times_) return;
    const auto now = std::chrono::steady_clock::now();
    (*times_)[p] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  PhaseTimes* times_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace k3::model
