// ExpertResidency: keeps the routed experts' share of the mapping within a
// byte budget (--expert-gb). Experts are only ever reached through the
// memory map; before a layer's experts run they are advised WILLNEED (the
// kernel starts reading them while routing for the rest of the chunk is
// bookkept), and once the resident set exceeds the budget the least recently
// used ones are advised DONTNEED, which drops their pages from this process.
// It also counts the expert bytes brought in (first use after not resident).
#pragma once

#include <cstdint>
#include <vector>

#include "k3/model/model_weights.h"

namespace k3::model {

class ExpertResidency {
 public:
  // budgetBytes == 0: unbounded (nothing is ever dropped).
  ExpertResidency(const ModelWeights& w, uint64_t budgetBytes);

  // The unique experts (ids ascending) layer `layer` is about to use.
  void willUse(int layer, const int* ids, size_t n);
  // Called after they ran: marks them most recent and trims to the budget.
  void used(int layer, const int* ids, size_t n);

  uint64_t bytesRead() const { return bytesRead_; }
  uint64_t residentBytes() const { return resident_; }
  uint64_t budget() const { return budget_; }

 private:
  size_t slot(int layer, int id) const;
  void unlink(size_t s);
  void pushFront(size_t s);
  void evictTo(uint64_t limit);

  const ModelWeights& w_;
  uint64_t budget_;
  int numExperts_;
  int firstMoe_;
  std::vector<uint32_t> prev_, next_;  // LRU list over slots; kNone-terminated
  std::vector<uint8_t> isResident_;
  uint32_t head_, tail_;
  uint64_t resident_ = 0;
  uint64_t bytesRead_ = 0;
};

}  // namespace k3::model
