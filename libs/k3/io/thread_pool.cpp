#include "k3/io/thread_pool.h"

#include <algorithm>

namespace k3 {

ThreadPool::ThreadPool(size_t threads) {
  if (threads == 0) threads = std::max<size_t>(1, std::thread::hardware_concurrency());
  for (size_t t = 1; t < threads; ++t) workers_.emplace_back([this, t] { workerLoop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::workerLoop(size_t tid) {
  size_t seen = 0;
  for (;;) {
    FunctionRef<void(size_t, size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(tid, size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run(FunctionRef<void(size_t, size_t)> fn) {
  if (workers_.empty()) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    pending_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  fn(0, size());
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::parallelFor(size_t n, FunctionRef<void(size_t, size_t)> fn, size_t grain) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  const size_t chunks = (n + grain - 1) / grain;
  auto body = [&](size_t tid, size_t nthreads) {
    const size_t c0 = chunks * tid / nthreads, c1 = chunks * (tid + 1) / nthreads;
    const size_t b = std::min(n, c0 * grain), e = std::min(n, c1 * grain);
    if (b < e) fn(b, e);
  };
  run(body);
}

}  // namespace k3
