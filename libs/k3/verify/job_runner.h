// runJobs: the hash passes' work distribution. Jobs run biggest first over a
// thread pool; each thread owns one set of large aligned read buffers.
// Thread-safety: runJobs calls job(i, buffers) concurrently from its pool, each
// i once and each thread with its own buffers; the job must be safe to run
// beside itself.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "k3/io/thread_pool.h"
#include "k3/verify/block_reader.h"
#include "k3/verify/hash_pass.h"

namespace k3::verify {

inline size_t jobThreadCount(const HashOptions& opts, size_t jobs) {
  size_t t = opts.threads ? opts.threads : std::max<size_t>(1, std::thread::hardware_concurrency());
  return std::max<size_t>(1, std::min(t, jobs));
}

// Runs job(i, buffers) for i in [0, weights.size()), heaviest first.
template <typename Job>
void runJobs(const std::vector<uint64_t>& weights, const HashOptions& opts, Job&& job) {
  std::vector<size_t> order(weights.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  std::atomic<size_t> next{0};
  ThreadPool pool(jobThreadCount(opts, order.size()));
  pool.run([&](size_t, size_t) {
    AlignedBuffers buffers(opts.blockBytes, 3);
    for (size_t k; (k = next.fetch_add(1)) < order.size();) job(order[k], buffers);
  });
}

}  // namespace k3::verify
