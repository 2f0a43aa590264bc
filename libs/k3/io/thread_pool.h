// ThreadPool: a fixed set of workers for fork-join loops. The calling thread
// takes part, so ThreadPool(1) runs everything inline. run() does not
// allocate, so it can sit on a per-token path. One job at a time: run() and
// parallelFor() must not be called concurrently on the same pool.
//
// A decode step is a few hundred short fork-joins, so hand-offs spin briefly
// (about 50 µs) on atomics before falling back to sleeping on a condition
// variable: a futex wake-up costs more than most of those jobs.
// Thread-safety: one owner thread drives a pool (see above); its workers only
// run the jobs they are given.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace k3 {

// A non-owning reference to a callable (no allocation, unlike std::function).
template <typename Sig>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, Args... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(a)...); }) {}
  R operator()(Args... a) const { return call_(obj_, std::forward<Args>(a)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

// A --threads value beyond a few per core only costs memory and scheduling;
// 100000 would exhaust the host's pids. The cap: 4 x cores, at most 1024.
inline constexpr size_t kThreadsPerCore = 4;
inline constexpr size_t kThreadCountCeiling = 1024;
size_t maxThreadCount();
// `requested` as given on a command line (signed, so -1 is not 2^64-1):
// returns it if in [1, maxThreadCount()], else throws Usage naming `flag`.
size_t checkThreadCount(long long requested, std::string_view flag = "--threads");

class ThreadPool {
 public:
  // threads = total workers including the caller; 0 means hardware_concurrency.
  // Throws k3::Error(Io) if a thread cannot be started (the others are joined).
  explicit ThreadPool(size_t threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // How many threads a job of `work` units is worth: one per `perThread`
  // units, at least 1, at most size(). A fork-join costs microseconds (more
  // when a worker has to be woken, or waits for a vCPU another process
  // holds), so a job smaller than that runs inline on the caller: k3-mini's
  // decode, made of such jobs, ran 20x slower on two threads than on one.
  size_t threadsFor(uint64_t work, uint64_t perThread) const;

  // Calls fn(tid, nthreads) once on every thread (tid 0 is the caller). Blocks.
  // With `threads` (1..size()), only that many take part: fn(tid, threads)
  // for tid < threads; 1 runs fn(0, 1) inline without touching the workers.
  void run(FunctionRef<void(size_t, size_t)> fn);
  void run(FunctionRef<void(size_t, size_t)> fn, size_t threads);

  // For work the threads take from a shared queue: fn(tid, threads) runs on
  // the caller and on each worker (tid < threads) that wakes while the
  // caller's own call is still running; once it returns (the queue is
  // empty), a worker that comes later skips the job, and the caller waits
  // only for the workers that joined. A worker the OS has not scheduled
  // (two vCPUs shared with other processes) then never holds up the step.
  void runJoinable(FunctionRef<void(size_t, size_t)> fn, size_t threads);

  // Calls fn(begin, end) on blocks of [0, n) (multiples of `grain`) that the
  // threads take in turn as they finish (runJoinable: a late worker is not
  // waited for), largest first (guided: a take is
  // the remaining work / (2 x threads), down to one grain); blocks until all
  // are done. Taking blocks in turn rather than one fixed range per thread
  // keeps a slower thread (two vCPUs sharing a core, a preempted worker) from
  // holding the others at the join, and the shrinking takes leave at most
  // about one grain of imbalance with few atomic operations. Which thread
  // runs a block, and where blocks begin, is not fixed, so fn must not depend
  // on either.
  void parallelFor(size_t n, FunctionRef<void(size_t, size_t)> fn, size_t grain = 1);
  // The same on at most `threads` threads (1: fn(0, n) inline).
  void parallelFor(size_t n, FunctionRef<void(size_t, size_t)> fn, size_t grain, size_t threads);

  // f(i) for every i in [0, n): one item runs inline (a decode step's
  // per-token loops then cost no fork-join), more go through parallelFor.
  template <class F>
  void forEach(size_t n, F&& f) {
    if (n == 1) return f(size_t{0});
    parallelFor(n, [&](size_t i0, size_t i1) {
      for (size_t i = i0; i < i1; ++i) f(i);
    });
  }

 private:
  void workerLoop(size_t tid);
  void stopWorkers();

  std::vector<std::thread> workers_;
  std::mutex mu_;  // guards only the sleeping hand-offs
  std::condition_variable wake_;
  std::condition_variable done_;
  FunctionRef<void(size_t, size_t)>* job_ = nullptr;  // published by generation_
  // Bumped by 2 per job; bit 0 set for a joinable job.
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> pending_{0};  // run(): workers not finished yet
  // runJoinable(): the job still takes workers; how many are inside it; its thread count.
  std::atomic<bool> accepting_{false};
  std::atomic<uint64_t> joinableGeneration_{0};  // the joinable job's generation, set before accepting_
  std::atomic<size_t> joined_{0};
  size_t joinableThreads_ = 0;
  std::atomic<bool> stop_{false};
};

}  // namespace k3
