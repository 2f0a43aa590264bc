#include "k3/model/expert_residency.h"

namespace k3::model {

namespace {
constexpr uint32_t kNone = UINT32_MAX;
}

ExpertResidency::ExpertResidency(const ModelWeights& w, uint64_t budgetBytes)
    : w_(w), budget_(budgetBytes), numExperts_(w.config().numExperts),
      firstMoe_(w.config().firstKDenseReplace), head_(kNone), tail_(kNone) {
  const int moeLayers = w.config().numLayers - firstMoe_;
  const size_t slots = static_cast<size_t>(moeLayers > 0 ? moeLayers : 0) * static_cast<size_t>(numExperts_);
  prev_.assign(slots, kNone);
  next_.assign(slots, kNone);
  isResident_.assign(slots, 0);
}

size_t ExpertResidency::slot(int layer, int id) const {
  return static_cast<size_t>(layer - firstMoe_) * static_cast<size_t>(numExperts_) + static_cast<size_t>(id);
}

void ExpertResidency::unlink(size_t s) {
  const uint32_t p = prev_[s], n = next_[s];
  (p == kNone ? head_ : next_[p]) = n;
  (n == kNone ? tail_ : prev_[n]) = p;
  prev_[s] = next_[s] = kNone;
}

void ExpertResidency::pushFront(size_t s) {
  prev_[s] = kNone;
  next_[s] = head_;
  if (head_ != kNone) prev_[head_] = static_cast<uint32_t>(s);
  head_ = static_cast<uint32_t>(s);
  if (tail_ == kNone) tail_ = head_;
}

void ExpertResidency::willUse(int layer, const int* ids, size_t n) {
  const auto& experts = w_.layer(layer).moeW.experts;
  for (size_t i = 0; i < n; ++i) {
    const ExpertWeights& e = experts[static_cast<size_t>(ids[i])];
    const size_t s = slot(layer, ids[i]);
    if (isResident_[s]) continue;
    bytesRead_ += w_.bytesPerExpert();
    if (budget_ != 0 && e.bytes != 0) w_.shards()[e.shard].mapping().adviseWillNeed(e.offset, e.bytes);
  }
}

void ExpertResidency::used(int layer, const int* ids, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const size_t s = slot(layer, ids[i]);
    if (isResident_[s]) {
      unlink(s);
    } else {
      isResident_[s] = 1;
      resident_ += w_.bytesPerExpert();
    }
    pushFront(s);
  }
  if (budget_ != 0) evictTo(budget_);
}

void ExpertResidency::evictTo(uint64_t limit) {
  while (resident_ > limit && tail_ != kNone) {
    const size_t s = tail_;
    unlink(s);
    isResident_[s] = 0;
    resident_ -= w_.bytesPerExpert();
    const int layer = static_cast<int>(s / static_cast<size_t>(numExperts_)) + firstMoe_;
    const ExpertWeights& e = w_.layer(layer).moeW.experts[s % static_cast<size_t>(numExperts_)];
    if (e.bytes != 0) w_.shards()[e.shard].mapping().adviseDontNeed(e.offset, e.bytes);
  }
}

}  // namespace k3::model
