#include "k3/serve/state_cache.h"

#include <algorithm>

namespace k3::serve {

namespace {
bool isPrefix(std::span<const int32_t> p, std::span<const int32_t> of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}
}  // namespace

size_t StateCache::resume(model::SequenceState& s, std::span<const int32_t> prompt) {
  if (budget_ == 0) {
    s.reset();
    return 0;
  }
  // Checkpoints of `s` the new prompt does not extend lose their MLA rows
  // once the prompt is fed: drop them now.
  for (auto it = lru_.begin(); it != lru_.end();)
    if (it->from != &s || isPrefix(it->snap.tokens, prompt)) {
      ++it;
    } else {
      bytes_ -= it->snap.bytes();
      it = lru_.erase(it);
    }
  // Usable checkpoints: a prefix of the prompt whose MLA rows `s` still holds.
  const std::span<const int32_t> held(s.tokens);
  const bool liveUsable = isPrefix(held, prompt) && (held.size() < prompt.size() || s.logitsCurrent);
  auto best = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (isPrefix(it->snap.tokens, prompt) && isPrefix(it->snap.tokens, held) &&
        (best == lru_.end() || it->snap.tokens.size() > best->snap.tokens.size()))
      best = it;
  if (liveUsable && (best == lru_.end() || held.size() >= best->snap.tokens.size())) return held.size();
  if (best == lru_.end()) {
    s.reset();
    return 0;
  }
  model::restoreTo(s, best->snap);
  lru_.splice(lru_.begin(), lru_, best);  // most recently used
  return s.tokens.size();
}

void StateCache::checkpoint(const model::SequenceState& s) {
  if (budget_ == 0) return;
  const auto& h = s.tokens;
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (it->snap.tokens == h) {  // already held: refresh its place
      it->from = &s;
      lru_.splice(lru_.begin(), lru_, it);
      return;
    }
  model::StateSnapshot snap = model::snapshotOf(s);
  if (snap.bytes() > budget_) return;
  bytes_ += snap.bytes();
  lru_.push_front({std::move(snap), &s});
  evictToBudget();
}

void StateCache::evictToBudget() {
  while (bytes_ > budget_ && !lru_.empty()) {
    bytes_ -= lru_.back().snap.bytes();
    lru_.pop_back();
  }
}

StateCacheStats StateCache::stats() const { return {lru_.size(), bytes_}; }

}  // namespace k3::serve
