#include "k3/serve/state_cache.h"

#include <algorithm>

namespace k3::serve {

namespace {
bool isPrefix(std::span<const int32_t> p, std::span<const int32_t> of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}
}  // namespace

size_t StateCache::resume(model::Session& s, std::span<const int32_t> prompt, bool liveLogitsCurrent) {
  if (budget_ == 0) {
    s.reset();
    return 0;
  }
  // Checkpoints the new prompt does not extend lose their MLA rows once the
  // prompt is fed: drop them now.
  for (auto it = lru_.begin(); it != lru_.end();)
    if (isPrefix(it->tokens, prompt)) {
      ++it;
    } else {
      bytes_ -= it->bytes();
      it = lru_.erase(it);
    }
  const std::span<const int32_t> held(s.history());
  const bool liveUsable = isPrefix(held, prompt) && (held.size() < prompt.size() || liveLogitsCurrent);
  auto best = lru_.end();
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (best == lru_.end() || it->tokens.size() > best->tokens.size()) best = it;
  if (liveUsable && (best == lru_.end() || held.size() >= best->tokens.size())) return held.size();
  if (best == lru_.end()) {
    s.reset();
    return 0;
  }
  s.restore(*best);
  lru_.splice(lru_.begin(), lru_, best);  // most recently used
  return s.history().size();
}

void StateCache::checkpoint(const model::Session& s) {
  if (budget_ == 0) return;
  const auto& h = s.history();
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (it->tokens == h) {  // already held: refresh its place
      lru_.splice(lru_.begin(), lru_, it);
      return;
    }
  model::StateSnapshot snap = s.snapshot();
  if (snap.bytes() > budget_) return;
  bytes_ += snap.bytes();
  lru_.push_front(std::move(snap));
  evictToBudget();
}

void StateCache::evictToBudget() {
  while (bytes_ > budget_ && !lru_.empty()) {
    bytes_ -= lru_.back().bytes();
    lru_.pop_back();
  }
}

StateCacheStats StateCache::stats() const { return {lru_.size(), bytes_}; }

}  // namespace k3::serve
