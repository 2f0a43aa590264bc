#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "k3/io/error.h"
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

// Back-to-back tiny jobs (the spinning hand-off) and jobs after idle gaps long
// enough for the workers to fall asleep (the condition-variable hand-off):
// every job runs exactly once per thread and run() returns only after all of
// them, so the plain (non-atomic) counters are race-free if the pool is right.
TEST(ThreadPool, HandOffsSpinningAndSleepingLoseNothing) {
  k3::ThreadPool pool(3);
  std::vector<long> perThread(pool.size(), 0);
  long expected = 0;
  for (int rep = 0; rep < 3000; ++rep) {
    pool.run([&](size_t tid, size_t) { perThread[tid] += rep; });
    expected += rep;
  }
  for (int rep = 0; rep < 5; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.run([&](size_t tid, size_t) { perThread[tid] += 1; });
    expected += 1;
  }
  for (long v : perThread) EXPECT_EQ(v, expected);
}

TEST(ThreadPool, ParallelForBlocksStartOnTheGrain) {
  for (size_t threads : {1, 2, 3}) {
    k3::ThreadPool pool(threads);
    for (size_t n : {0, 1, 7, 64, 1000, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallelFor(n, [&](size_t b, size_t e) {
        EXPECT_EQ(b % 16, 0u);  // blocks start on the grain
        EXPECT_LT(b, e);
        for (size_t i = b; i < e; ++i) hits[i]++;
      }, 16);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

// forEach: every index once, whatever the pool; a single item runs on the
// calling thread (a decode step's per-token loops hand nothing off).
TEST(ThreadPool, ForEachCoversEveryIndexOnceAndRunsOneItemInline) {
  for (size_t threads : {1, 2, 3}) {
    k3::ThreadPool pool(threads);
    for (size_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.forEach(n, [&](size_t i) { hits[i]++; });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
    std::thread::id ran;
    pool.forEach(1, [&](size_t) { ran = std::this_thread::get_id(); });
    EXPECT_EQ(ran, std::this_thread::get_id());
  }
}

// A thread that cannot start (here: the address space is full, so no stack)
// must not std::terminate with the started workers unjoined: the pool joins
// them and throws a clean k3::Error. Run in a child so the limit stays there.
#if !defined(__SANITIZE_ADDRESS__)  // ASan reserves terabytes of address space
TEST(ThreadPoolCreation, FailingThreadJoinsTheStartedOnesAndThrows) {
  EXPECT_EXIT(
      {
        struct rlimit rl {};
        ::getrlimit(RLIMIT_AS, &rl);
        // Room for a few 8 MiB stacks beyond what is mapped now, not for 200.
        FILE* f = std::fopen("/proc/self/statm", "r");
        unsigned long pages = 0;
        if (!f || std::fscanf(f, "%lu", &pages) != 1) std::_Exit(3);
        std::fclose(f);
        rl.rlim_cur = pages * static_cast<unsigned long>(::sysconf(_SC_PAGESIZE)) + (64ul << 20);
        ::setrlimit(RLIMIT_AS, &rl);
        try {
          k3::ThreadPool pool(200);
          std::_Exit(4);  // all 200 started: the limit did not bite
        } catch (const k3::Error& e) {
          const std::string what = e.what();
          std::_Exit(what.find("cannot start thread") != std::string::npos ? 0 : 5);
        }
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

TEST(ThreadPoolCreation, ThreadCountIsCheckedAgainstTheMachine) {
  const size_t most = k3::maxThreadCount();
  EXPECT_GE(most, 1u);
  EXPECT_LE(most, k3::kThreadCountCeiling);
  EXPECT_EQ(k3::checkThreadCount(1), 1u);
  EXPECT_EQ(k3::checkThreadCount(static_cast<long long>(most)), most);
  for (long long bad : {0LL, -1LL, -100000LL, static_cast<long long>(most) + 1, 100000LL, 1LL << 40}) {
    try {
      (void)k3::checkThreadCount(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find("--threads " + std::to_string(bad)), std::string::npos) << e.what();
    }
  }
}

// threadsFor: one thread per `perThread` units of work, within [1, size()].
TEST(ThreadPool, ThreadsForScalesWithTheWork) {
  k3::ThreadPool pool(4);
  EXPECT_EQ(pool.threadsFor(0, 100), 1u);
  EXPECT_EQ(pool.threadsFor(99, 100), 1u);
  EXPECT_EQ(pool.threadsFor(200, 100), 2u);
  EXPECT_EQ(pool.threadsFor(399, 100), 3u);
  EXPECT_EQ(pool.threadsFor(1u << 30, 100), 4u);
  EXPECT_EQ(pool.threadsFor(5, 0), 4u);  // no threshold: every thread
}

// run / parallelFor on fewer threads: only tids below the count take part,
// each told that count; one thread runs inline on the caller.
TEST(ThreadPool, RunAndParallelForOnFewerThreads) {
  k3::ThreadPool pool(3);
  for (size_t want : {1, 2, 3}) {
    std::vector<std::atomic<int>> seen(pool.size());
    std::atomic<bool> onCaller{false};
    const auto caller = std::this_thread::get_id();
    pool.run([&](size_t tid, size_t n) {
      EXPECT_EQ(n, want);
      seen[tid]++;
      if (std::this_thread::get_id() == caller) onCaller = true;
    }, want);
    for (size_t t = 0; t < pool.size(); ++t) EXPECT_EQ(seen[t].load(), t < want ? 1 : 0) << "want " << want;
    EXPECT_TRUE(onCaller.load());
    std::vector<std::atomic<int>> hits(100);
    std::atomic<int> calls{0};
    pool.parallelFor(100, [&](size_t b, size_t e) {
      ++calls;
      for (size_t i = b; i < e; ++i) hits[i]++;
    }, 1, want);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    if (want == 1) {
      EXPECT_EQ(calls.load(), 1);  // the whole range inline
    }
  }
}

// runJoinable: the caller always takes part; workers that join get distinct
// tids below the count; items taken from a shared counter are each done
// once, thousands of times over (late workers skip, never run a stale job).
TEST(ThreadPool, RunJoinableDoesEveryItemOnce) {
  k3::ThreadPool pool(3);
  const auto caller = std::this_thread::get_id();
  for (size_t want : {1, 2, 3})
    for (int rep = 0; rep < 2000; ++rep) {
      const size_t n = 1 + rep % 17;
      std::vector<std::atomic<int>> hits(n);
      std::vector<std::atomic<int>> inside(pool.size());
      std::atomic<size_t> next{0};
      std::atomic<bool> callerRan{false};
      pool.runJoinable([&](size_t tid, size_t threads) {
        EXPECT_EQ(threads, want);
        EXPECT_LT(tid, want);
        EXPECT_EQ(inside[tid]++, 0) << "tid " << tid << " twice";
        if (std::this_thread::get_id() == caller) callerRan = true;
        for (size_t i; (i = next++) < n;) hits[i]++;
      }, want);
      ASSERT_TRUE(callerRan.load());
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
}
