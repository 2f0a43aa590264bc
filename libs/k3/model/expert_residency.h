// ExpertResidency: how the routed experts reach the kernels, and how much of
// them stays in memory (--expert-gb). One way in, whichever the mode: the
// layer names its experts with willUse(), then compute threads take them with
// next() until it returns an empty lease.
//
// Unbounded (budget 0): experts are used in place through the shard mapping,
// zero-copy; the page cache keeps what the machine can hold. next() hands
// them out at once, those with the most rows first (willUse's `rows`), so
// threads taking them in turn finish together and the last taken are small.
//
// Bounded: a fixed pool of expert-sized slots (budget ÷ slot bytes, at least
// one) holds experts, least recently used evicted first. willUse() hands every
// expert of the layer's list that is not held to loader threads owned here,
// which read them into slots — several reads in flight, so the disk sees a
// queue and compute overlaps I/O. Compute threads then take the experts with
// next() in the order they become ready (held ones first) and give each back
// with its lease. A slot that is leased, loading, or still owed to the current
// list is never evicted; when the budget holds fewer slots than the list has
// experts, the rest are read into slots as earlier ones are given back (a
// shorter pipeline, same results). Each expert of a list is read at most once,
// so chunked prefill reads each unique expert once per chunk.
//
// Loaders: one read queue per file system the shards are on (a container
// spread over several drives, k3-repack --spread, has one per drive), each
// with its own `loaders` threads, so every drive keeps its own queue depth
// and a slow one does not hold up the reads of another.
//
// Reads use O_DIRECT when the file system allows it: the expert's byte range
// widened to 4 KiB boundaries, straight into the aligned slot, bypassing the
// page cache (which a memory cgroup would charge, and reclaiming it costs
// CPU). Otherwise plain pread. Reading into our own slots rather than
// faulting the mapping is what makes the bound real: a page fault on a file
// mapping maps a whole fault-around window (64 KiB here), so touching small
// experts through the mapping makes far more than the budget resident.
// Thread-safety: willUse() from one thread at a time; next(), lease resets and
// stats() from any number of threads (one mutex); the loader threads are its
// own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "k3/model/model_weights.h"

namespace k3::model {

class ExpertResidency;

// One expert of the current list, handed to one compute thread; its slot
// stays put until the lease is reset or destroyed.
class ExpertLease {
 public:
  ExpertLease() = default;
  ExpertLease(ExpertLease&& o) noexcept { *this = std::move(o); }
  ExpertLease& operator=(ExpertLease&& o) noexcept;
  ExpertLease(const ExpertLease&) = delete;
  ExpertLease& operator=(const ExpertLease&) = delete;
  ~ExpertLease() { reset(); }

  explicit operator bool() const { return weights_ != nullptr; }
  size_t index() const { return index_; }  // position in the willUse() list
  const ExpertWeights& weights() const { return *weights_; }
  void reset();

 private:
  friend class ExpertResidency;
  ExpertResidency* owner_ = nullptr;
  const ExpertWeights* weights_ = nullptr;
  size_t index_ = 0;
  int32_t slot_ = -1;  // -1: in place (unbounded)
};

struct ResidencyOptions {
  size_t loaders = 8;  // reader threads = reads in flight, per file system (bounded only)
  bool direct = true;  // try O_DIRECT; false: always pread through the page cache
};

struct ResidencyStats {
  uint64_t expertBytes = 0;   // expert bytes brought in (unbounded: first touches)
  uint64_t diskBytes = 0;     // bytes requested from the files (with O_DIRECT widening)
  uint64_t reads = 0;         // expert reads
  uint64_t uniqueReads = 0;   // of which the expert's first (the rest were evicted and read again)
  uint64_t directReads = 0;   // of which O_DIRECT
  double readSeconds = 0;     // wall time with at least one read in flight
  double waitSeconds = 0;     // wall time with at least one compute thread waiting for a read
  uint64_t residentBytes = 0; // slots holding an expert (bounded) or experts touched (unbounded)
  uint64_t budgetBytes = 0;
  size_t readQueues = 0;      // bounded: file systems read from, one loader queue each
};

class ExpertResidency {
 public:
  // budgetBytes == 0: unbounded.
  ExpertResidency(const ModelWeights& w, uint64_t budgetBytes, ResidencyOptions opts = {});
  ~ExpertResidency();
  ExpertResidency(const ExpertResidency&) = delete;
  ExpertResidency& operator=(const ExpertResidency&) = delete;

  // Starts the list of unique experts (ids ascending) that layer `layer` uses
  // now; bounded, reads of the ones not held start at once. rows (optional,
  // [n]): the work each carries; unbounded, next() hands out the most rows
  // first (ties in list order), bounded it is not used. Replaces any earlier
  // list; call from one thread, with no lease of the earlier list out.
  void willUse(int layer, const int* ids, size_t n, const size_t* rows = nullptr);
  // The next expert of the list that is ready (unbounded: all of them, in
  // place), waiting for a read if none is; an empty lease once every expert
  // of the list has been handed out. Safe from many threads. Throws the
  // read's error for an expert that failed.
  ExpertLease next();

  ResidencyStats stats() const;
  uint64_t bytesRead() const { return stats().expertBytes; }
  uint64_t residentBytes() const { return stats().residentBytes; }
  uint64_t budget() const { return budget_; }
  bool bounded() const { return budget_ != 0; }
  size_t slotCount() const { return slots_.size(); }
  uint64_t slotBytes() const { return stride_; }
  uint64_t bytesPerExpert() const;

 private:
  friend class ExpertLease;
  enum class SlotState : uint8_t { Free, Loading, Ready, Failed };
  struct Slot {
    int64_t key = -1;  // expert held, -1 = none
    SlotState state = SlotState::Free;
    uint32_t pins = 0;    // leases out
    bool owed = false;    // still to be handed out for the current list
    size_t listIndex = 0;
    int32_t prev = -1, next = -1;  // evictable (LRU) list links
    bool linked = false;
    ExpertWeights view;   // the expert's views rebased onto the slot
    std::exception_ptr error;
  };
  using Clock = std::chrono::steady_clock;

  // Bounded, at start: expert pages already in the page cache (read-around of
  // faults on neighbouring dense tensors brings them in — read_ahead_kb can be
  // megabytes) are dropped; nobody reads them through the cache, and a memory
  // cgroup charges them.
  void dropCachedExperts() const;
  void closeFiles();
  size_t key(int layer, int id) const;
  const ExpertWeights& expert(size_t key) const;
  void release(int32_t slot);
  // Slot bookkeeping, all under mu_.
  void interleavePendingLocked();    // pending list items round-robin over the loader queues
  void scheduleLocked();             // pending list items into free or evictable slots
  void refreshLocked(int32_t slot);  // (un)link by evictability; frees a failed slot nobody is owed
  void unlinkLocked(int32_t slot);
  void loaderLoop(size_t queue);
  // Reads expert `key` into `slot`; returns the bytes requested from the file.
  uint64_t readExpert(size_t slot, size_t key, int directFd, bool& refused);

  const ModelWeights& w_;
  uint64_t budget_;
  ResidencyOptions opts_;
  int numExperts_, firstMoe_;
  uint64_t stride_ = 0;  // slot bytes: expert bytes widened to 4 KiB pages, + one page

  std::vector<uint8_t> seen_;  // unbounded: experts touched once
  std::vector<size_t> handOrder_;  // unbounded: list indices in the order next() hands them out

  // Bounded: files, slots and the current list; everything below mu_ is guarded by it.
  std::vector<int> fds_, directFds_;  // per shard; directFds_ -1 where O_DIRECT cannot be opened
  std::vector<size_t> queueOf_;       // per shard: its file system's loader queue
  std::unique_ptr<uint8_t, void (*)(void*)> pool_{nullptr, nullptr};
  std::vector<std::thread> loaders_;

  mutable std::mutex mu_;
  std::deque<std::condition_variable> loadCvs_;  // per loader queue
  std::condition_variable readyCv_;
  bool stop_ = false;
  std::vector<uint8_t> directRefused_;  // per shard: an O_DIRECT read failed with EINVAL
  std::vector<Slot> slots_;
  std::vector<int32_t> slotOf_;     // expert key -> slot, -1 = not held
  std::vector<uint8_t> everRead_;   // expert key -> read at least once
  std::vector<int32_t> freeSlots_;
  int32_t lruHead_ = -1, lruTail_ = -1;  // evictable slots, least recently used first
  std::vector<std::deque<int32_t>> loadQueues_;  // slots to read, per file system
  std::vector<uint8_t> queuedTo_;                // scheduleLocked's scratch: queues given a slot
  std::vector<size_t> list_;        // keys of the current list
  std::vector<size_t> pending_;     // list indices not yet given a slot, in order
  std::vector<std::vector<size_t>> pendingByQueue_;  // interleavePendingLocked's scratch
  size_t pendingFrom_ = 0, handedOut_ = 0;
  std::deque<int32_t> readyQueue_;  // slots ready and owed to the current list
  size_t inFlight_ = 0, waiting_ = 0;
  Clock::time_point inFlightSince_, waitingSince_;
  ResidencyStats stats_;
};

}  // namespace k3::model
