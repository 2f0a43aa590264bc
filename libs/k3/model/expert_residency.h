// ExpertResidency: how the routed experts reach the kernels, and how much of
// them stays in memory (--expert-gb).
//
// Unbounded (budget 0): experts are used in place through the shard mapping,
// zero-copy; the page cache keeps what the machine can hold.
//
// Bounded: a fixed pool of expert-sized slots (budget ÷ expert bytes, at
// least one) holds the experts in use, least recently used evicted first.
// Before a layer's experts run, the ones not held are announced to the kernel
// (POSIX_FADV_WILLNEED: read-ahead starts while earlier experts compute); each
// is then read into its slot with pread. Reading through our own slots rather
// than faulting the mapping is what makes the bound real: a page fault on a
// file mapping maps a whole fault-around window (64 KiB here), so touching
// small experts through the mapping makes far more than the budget resident.
// The page cache itself is reclaimable and not part of the process's RSS.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "k3/model/model_weights.h"

namespace k3::model {

class ExpertResidency {
 public:
  // budgetBytes == 0: unbounded.
  ExpertResidency(const ModelWeights& w, uint64_t budgetBytes);
  ~ExpertResidency();
  ExpertResidency(const ExpertResidency&) = delete;
  ExpertResidency& operator=(const ExpertResidency&) = delete;

  // The unique experts (ids ascending) layer `layer` is about to use.
  void willUse(int layer, const int* ids, size_t n);
  // The expert's weights, valid until the next acquire().
  const ExpertWeights& acquire(int layer, int id);

  uint64_t bytesRead() const { return bytesRead_; }     // experts brought in
  uint64_t residentBytes() const { return resident_; }  // held in slots (bounded) or touched (unbounded)
  uint64_t budget() const { return budget_; }
  bool bounded() const { return budget_ != 0; }

 private:
  size_t key(int layer, int id) const;
  void touch(size_t slot);
  size_t evictOne();

  const ModelWeights& w_;
  uint64_t budget_;
  int numExperts_, firstMoe_;
  std::vector<uint8_t> seen_;        // unbounded: experts touched once
  std::vector<int> fds_;             // bounded: one descriptor per shard
  std::unique_ptr<uint8_t[]> pool_;  // bounded: slots × expert bytes (untouched until used)
  std::vector<int64_t> slotKey_;     // expert in each slot, -1 = free
  std::vector<uint64_t> slotUse_;    // last-use tick per slot
  std::vector<int32_t> slotOf_;      // expert key -> slot, -1 = not held
  std::vector<ExpertWeights> slotView_;
  uint64_t tick_ = 0;
  uint64_t resident_ = 0;
  uint64_t bytesRead_ = 0;
};

}  // namespace k3::model
