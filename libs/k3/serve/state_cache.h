// Reuse of model state across requests. Clients resend the whole
// conversation each turn and KDA state cannot be rewound, so the cache keeps
// the live session (its history) plus checkpoints taken at the end of each
// request's prompt (model::StateSnapshot: KDA/conv copied, the MLA cache
// only as a length), least recently used first out beyond a byte budget.
//
// Invariant: every checkpoint's tokens are a prefix of the live history, so
// the live MLA cache still holds the rows it relies on. When a prompt
// diverges from the history, the checkpoints that are not a prefix of the
// new prompt would lose their rows and are dropped.
// Thread-safety: not thread-safe; the engine's worker thread owns it (its stats
// are copied out under the engine's lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>

#include "k3/model/session.h"

namespace k3::serve {

struct StateCacheStats {
  size_t entries = 0;
  uint64_t bytes = 0;
};

class StateCache {
 public:
  // budgetBytes 0: no reuse at all, every request starts from token 0.
  explicit StateCache(uint64_t budgetBytes) : budget_(budgetBytes) {}

  // Brings `s` to the longest reusable prefix of `prompt` (the live state,
  // a checkpoint, or nothing) and returns its length; the caller feeds the
  // rest. `liveLogitsCurrent`: s.lastLogits() belongs to its last token
  // (false after a cancelled feed). Never returns more than prompt.size(),
  // and returns prompt.size() only with logits to generate from.
  size_t resume(model::Session& s, std::span<const int32_t> prompt, bool liveLogitsCurrent);

  // Checkpoints `s` (call after a completed prompt feed).
  void checkpoint(const model::Session& s);

  StateCacheStats stats() const;

 private:
  void evictToBudget();
  uint64_t budget_;
  std::list<model::StateSnapshot> lru_;  // most recent first
  uint64_t bytes_ = 0;
};

}  // namespace k3::serve
