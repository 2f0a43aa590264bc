#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

#include "k3/io/thread_pool.h"

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (size_t threads : {1, 2, 3}) {
    k3::ThreadPool pool(threads);
    for (size_t n : {0, 1, 7, 64, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallelFor(n, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) hits[i]++;
      }, 4);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPool, RunGivesEachThreadItsId) {
  k3::ThreadPool pool(3);
  std::vector<std::atomic<int>> seen(pool.size());
  for (int rep = 0; rep < 100; ++rep)
    pool.run([&](size_t tid, size_t n) {
      EXPECT_EQ(n, 3u);
      seen[tid]++;
    });
  for (auto& s : seen) EXPECT_EQ(s.load(), 100);
}
