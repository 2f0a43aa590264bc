#include "k3/io/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "k3/io/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace k3 {

namespace {

// Polling for up to kSpinTime, then a few yields: a decode step is a few
// hundred fork-joins, and on a small model one token is ~100 µs with only
// its largest steps split, so a worker that slept between them (a futex wake
// costs tens of µs on a VM) made the default thread count slower than one.
// The yields serve the case where threads outnumber free cores: the thread
// being waited for is the one that needs the CPU.
constexpr auto kSpinTime = std::chrono::microseconds(200);
constexpr int kPollsPerClockRead = 64;
constexpr int kYieldIterations = 32;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls `ready` for a while; true if it became true.
template <typename Ready>
bool spinUntil(Ready ready) {
  const auto end = std::chrono::steady_clock::now() + kSpinTime;
  do {
    for (int i = 0; i < kPollsPerClockRead; ++i) {
      if (ready()) return true;
      cpuRelax();
    }
  } while (std::chrono::steady_clock::now() < end);
  for (int i = 0; i < kYieldIterations; ++i) {
    if (ready()) return true;
    std::this_thread::yield();
  }
  return ready();
}

}  // namespace

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  // A thread that cannot start (out of pids, memory, a thread limit) must not
  // leave the started ones running unjoined (std::terminate): stop and join
  // them, then report which one failed.
  try {
    workers_.reserve(threads - 1);
    for (size_t t = 1; t < threads; ++t) workers_.emplace_back([this, t] { workerLoop(t); });
  } catch (const std::exception& e) {
    const size_t started = workers_.size() + 1;
    stopWorkers();
    fail(ErrorKind::Io, "thread pool: cannot start thread ", started + 1, " of ", threads, " (", e.what(),
         "); use fewer --threads");
  }
}

ThreadPool::~ThreadPool() { stopWorkers(); }

void ThreadPool::stopWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

size_t maxThreadCount() {
  const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  return std::min<size_t>(kThreadCountCeiling, kThreadsPerCore * cores);
}

size_t checkThreadCount(long long requested, std::string_view flag) {
  const size_t most = maxThreadCount();
  if (requested < 1 || static_cast<unsigned long long>(requested) > most)
    fail(ErrorKind::Usage, flag, " ", requested, ": must be in [1, ", most, "] (", kThreadsPerCore, " x ",
         std::max(1u, std::thread::hardware_concurrency()), " cores, at most ", kThreadCountCeiling, ")");
  return static_cast<size_t>(requested);
}

void ThreadPool::workerLoop(size_t tid) {
  uint64_t seen = 0;
  for (;;) {
    auto moved = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spinUntil(moved)) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, moved);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    if (seen & 1) {
      // Joinable: enter, then check the job still takes workers (the caller
      // stops taking them, then counts who entered: one of the two sees the
      // other's write) and is the one seen. The job's own generation is
      // published before it takes workers, so a worker that saw an older job
      // cannot enter the next one early (and then again once woken by it).
      joined_.fetch_add(1, std::memory_order_seq_cst);
      if (accepting_.load(std::memory_order_seq_cst) && joinableGeneration_.load(std::memory_order_seq_cst) == seen &&
          tid < joinableThreads_)
        (*job_)(tid, joinableThreads_);
      if (joined_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_.notify_one();
      }
      continue;
    }
    (*job_)(tid, size());
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taking the lock orders this against a caller about to sleep.
      std::lock_guard<std::mutex> lock(mu_);
      done_.notify_one();
    }
  }
}

void ThreadPool::runJoinable(FunctionRef<void(size_t, size_t)> fn, size_t threads) {
  threads = std::clamp<size_t>(threads, 1, size());
  if (threads == 1) return fn(0, 1);
  job_ = &fn;
  joinableThreads_ = threads;
  const uint64_t gen = (generation_.load(std::memory_order_relaxed) | 1) + 2;
  joinableGeneration_.store(gen, std::memory_order_seq_cst);
  accepting_.store(true, std::memory_order_seq_cst);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.store(gen, std::memory_order_seq_cst);
  }
  wake_.notify_all();
  fn(0, threads);
  accepting_.store(false, std::memory_order_seq_cst);
  auto finished = [&] { return joined_.load(std::memory_order_seq_cst) == 0; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, finished);
  }
  job_ = nullptr;
}

size_t ThreadPool::threadsFor(uint64_t work, uint64_t perThread) const {
  const uint64_t t = perThread ? work / perThread : size();
  return static_cast<size_t>(std::clamp<uint64_t>(t, 1, size()));
}

void ThreadPool::run(FunctionRef<void(size_t, size_t)> fn, size_t threads) {
  threads = std::clamp<size_t>(threads, 1, size());
  if (threads == 1) return fn(0, 1);
  if (threads == size()) return run(fn);
  auto some = [&](size_t tid, size_t) {
    if (tid < threads) fn(tid, threads);
  };
  run(some);
}

void ThreadPool::run(FunctionRef<void(size_t, size_t)> fn) {
  if (workers_.empty()) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(workers_.size(), std::memory_order_relaxed);
  {
    // Under the lock, so a worker between its check and its wait cannot miss it.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.store((generation_.load(std::memory_order_relaxed) | 1) + 1, std::memory_order_release);
  }
  wake_.notify_all();
  fn(0, size());
  auto finished = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, finished);
  }
  job_ = nullptr;
}

void ThreadPool::parallelFor(size_t n, FunctionRef<void(size_t, size_t)> fn, size_t grain) {
  parallelFor(n, fn, grain, size());
}

void ThreadPool::parallelFor(size_t n, FunctionRef<void(size_t, size_t)> fn, size_t grain, size_t threads) {
  if (n == 0) return;
  threads = std::clamp<size_t>(threads, 1, size());
  if (threads == 1) return fn(0, n);
  grain = std::max<size_t>(1, grain);
  const size_t grains = (n + grain - 1) / grain;
  // Guided: each take is the remaining grains / (2 x threads), at least one.
  // Early takes are large (few atomics), the last ones a grain each, so the
  // threads finish within about one grain of each other.
  const size_t divisor = 2 * threads;
  std::atomic<size_t> next{0};
  auto body = [&](size_t, size_t) {
    size_t g0 = next.load(std::memory_order_relaxed);
    for (;;) {
      if (g0 >= grains) return;
      const size_t take = std::max<size_t>(1, (grains - g0) / divisor);
      if (!next.compare_exchange_weak(g0, g0 + take, std::memory_order_relaxed)) continue;
      fn(g0 * grain, std::min(n, (g0 + take) * grain));
      g0 = next.load(std::memory_order_relaxed);
    }
  };
  runJoinable(body, threads);
}

}  // namespace k3
