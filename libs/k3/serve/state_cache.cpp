#include "k3/serve/state_cache.h"

#include <algorithm>
#include <cstdio>

namespace k3::serve {

namespace {
bool isPrefix(std::span<const int32_t> p, std::span<const int32_t> of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}
}  // namespace

StateCache::StateCache(const StateCacheOptions& o, const ModelConfig& c) : budget_(o.ramBytes), container_(o.container) {
  if (budget_ == 0 || o.dir.empty()) return;
  auto log = o.log ? o.log : [](const std::string& line) { std::fprintf(stderr, "[k3-serve] state cache: %s\n", line.c_str()); };
  // Queued writes are bounded by the RAM budget too (residentBound).
  dir_ = std::make_unique<StateDirectory>(o.dir, o.diskBytes, budget_, container_, StateShape::of(c), log);
}

size_t StateCache::resume(model::SequenceState& s, std::span<const int32_t> prompt) {
  if (budget_ == 0) {
    s.reset();
    return 0;
  }
  const std::span<const int32_t> held(s.tokens);
  const size_t live = isPrefix(held, prompt) && (held.size() < prompt.size() || s.logitsCurrent) ? held.size() : 0;
  const std::vector<StateKey> keys = prefixKeys(container_, prompt);
  std::unordered_set<std::string> files;
  if (dir_) files = dir_->listKeys();
  for (size_t n = prompt.size(); n > live; --n) {
    const std::span<const int32_t> prefix = prompt.first(n);
    if (auto it = index_.find(keys[n]); it != index_.end() && isPrefix(it->second->snap->tokens, prefix) &&
                                        it->second->snap->tokens.size() == n) {
      model::restoreTo(s, *it->second->snap);
      lru_.splice(lru_.begin(), lru_, it->second);  // most recently used
      return n;
    }
    if (!files.empty() && files.count(keys[n].hex())) {
      std::shared_ptr<const model::StateSnapshot> snap = dir_->load(keys[n]);
      if (snap && snap->tokens.size() == n && isPrefix(snap->tokens, prefix)) {
        model::restoreTo(s, *snap);
        insert(keys[n], std::move(snap));
        return n;
      }
    }
  }
  if (live == 0) s.reset();
  return live;
}

void StateCache::checkpoint(const model::SequenceState& s) {
  if (budget_ == 0 || s.tokens.empty() || !s.logitsCurrent) return;
  const StateKey key = stateKey(container_, s.tokens);
  if (auto it = index_.find(key); it != index_.end()) {  // already held: refresh its place
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  auto snap = std::make_shared<const model::StateSnapshot>(model::snapshotOf(s));
  if (dir_) dir_->publish(snap);
  insert(key, std::move(snap));
}

void StateCache::insert(const StateKey& key, std::shared_ptr<const model::StateSnapshot> snap) {
  const uint64_t b = snap->bytes();
  if (b > budget_) return;
  bytes_ += b;
  lru_.push_front({key, std::move(snap)});
  index_[key] = lru_.begin();
  evictToBudget();
}

void StateCache::evictToBudget() {
  while (bytes_ > budget_ && !lru_.empty()) {  // already on disk (published when taken), if there is one
    bytes_ -= lru_.back().snap->bytes();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void StateCache::drain() {
  if (dir_) dir_->drain();
}

StateCacheStats StateCache::stats() const { return {lru_.size(), bytes_, dir_ ? dir_->stats() : StateDirectoryStats{}}; }

}  // namespace k3::serve
