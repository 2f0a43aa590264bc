// How many of the pool's threads one step of the forward is worth, by its
// size in multiply-adds. A fork-join costs a few microseconds when the
// workers are spinning and far more when one must be woken or waits for a
// vCPU another process holds, so a step smaller than kMacsPerThread per
// thread runs on fewer threads (inline below it): k3-mini's decode, every
// step of it tiny, ran 20x slower on two threads than on one before this.
// Which thread computes a row or a head never changes its bits, so the
// results are the same at any thread count. The figure is measured with
// scripts/bench_run (docs/K3_RUN.md, "Threads per step").
// Thread-safety: pure.
#pragma once

#include <cstdint>

#include "k3/io/thread_pool.h"

namespace k3::model {

inline constexpr uint64_t kMacsPerThread = uint64_t{1} << 17;

inline size_t threadsForMacs(const ThreadPool& pool, uint64_t macs) { return pool.threadsFor(macs, kMacsPerThread); }

}  // namespace k3::model
