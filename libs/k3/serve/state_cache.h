// Reuse of model state across requests. Clients resend the whole
// conversation each turn and KDA state cannot be rewound, so the cache keeps
// checkpoints taken at the end of each request's prompt (model::StateSnapshot:
// KDA/conv copied, the MLA cache only as a length), least recently used first
// out beyond a byte budget; a sequence's live state (its tokens) is reused as
// is when it extends.
//
// A checkpoint relies on the MLA rows of the sequence it was taken from, so
// it is restored only into a sequence whose tokens it is a prefix of (one
// that still holds those rows); when a sequence takes a new prompt, its
// checkpoints that are not a prefix of it would lose their rows and are
// dropped.
// Thread-safety: not thread-safe; the engine's worker thread owns it (its stats
// are copied out under the engine's lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>

#include "k3/model/sequence_state.h"

namespace k3::serve {

struct StateCacheStats {
  size_t entries = 0;
  uint64_t bytes = 0;
};

class StateCache {
 public:
  // budgetBytes 0: no reuse at all, every request starts from token 0.
  explicit StateCache(uint64_t budgetBytes) : budget_(budgetBytes) {}

  // Brings `s` to the longest reusable prefix of `prompt` (its live state,
  // a checkpoint, or nothing) and returns its length; the caller feeds the
  // rest. Never returns more than prompt.size(), and returns prompt.size()
  // only with logits to generate from (s.logitsCurrent).
  size_t resume(model::SequenceState& s, std::span<const int32_t> prompt);

  // Checkpoints `s` (call after a completed prompt feed).
  void checkpoint(const model::SequenceState& s);

  StateCacheStats stats() const;

 private:
  void evictToBudget();
  uint64_t budget_;
  struct Entry {
    model::StateSnapshot snap;
    const model::SequenceState* from;  // whose MLA rows it relies on
  };
  std::list<Entry> lru_;  // most recent first
  uint64_t bytes_ = 0;
};

}  // namespace k3::serve
