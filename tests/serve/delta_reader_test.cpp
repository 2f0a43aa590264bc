#include "k3/serve/delta_reader.h"

#include <gtest/gtest.h>

#include <thread>

namespace {

using k3::serve::DeltaReader;
using k3::serve::GenerationJob;
using k3::serve::OutputDelta;
using ms = std::chrono::milliseconds;

void push(GenerationJob& job, std::string text) {
  OutputDelta d;
  d.text = std::move(text);
  {
    std::lock_guard<std::mutex> lock(job.m);
    job.pending.push_back(std::move(d));
  }
  job.cv.notify_all();
}

void finish(GenerationJob& job) {
  {
    std::lock_guard<std::mutex> lock(job.m);
    job.done = true;
  }
  job.cv.notify_all();
}

struct HandOver {
  DeltaReader::Clock::time_point at;
  std::vector<std::string> texts;
};

// Reads the job to the end, recording every non-empty hand-over.
std::vector<HandOver> readAll(GenerationJob& job, ms interval) {
  DeltaReader reader(job, interval, ms(20));
  std::vector<HandOver> got;
  std::vector<OutputDelta> out;
  bool done = false;
  while (!done) {
    done = reader.take(out);
    if (out.empty()) continue;
    HandOver h{DeltaReader::Clock::now(), {}};
    for (auto& d : out) h.texts.push_back(d.text);
    got.push_back(std::move(h));
  }
  return got;
}

std::vector<std::string> flat(const std::vector<HandOver>& hs) {
  std::vector<std::string> all;
  for (const auto& h : hs) all.insert(all.end(), h.texts.begin(), h.texts.end());
  return all;
}

std::vector<std::string> produce(GenerationJob& job, int n, ms gap) {
  std::vector<std::string> sent;
  for (int i = 0; i < n; ++i) {
    sent.push_back(std::to_string(i));
    push(job, sent.back());
    std::this_thread::sleep_for(gap);
  }
  finish(job);
  return sent;
}

TEST(DeltaReader, BatchesFastOutputAtMostOncePerInterval) {
  GenerationJob job;
  std::vector<std::string> sent;
  std::thread producer([&] { sent = produce(job, 80, ms(1)); });
  const auto got = readAll(job, ms(30));
  producer.join();
  EXPECT_EQ(flat(got), sent);  // nothing lost, nothing reordered
  // Each hand-over after the first waited for the interval (the last may come
  // early: a finished job is handed over at once).
  for (size_t i = 1; i + 1 < got.size(); ++i)
    EXPECT_GE(got[i].at - got[i - 1].at, ms(29)) << "hand-over " << i;
  // 80 deltas over >= 80 ms: batched, not one per delta.
  EXPECT_LT(got.size(), sent.size() / 4);
}

TEST(DeltaReader, IntervalZeroHandsOverEachWakeUp) {
  GenerationJob job;
  std::vector<std::string> sent;
  std::thread producer([&] { sent = produce(job, 12, ms(15)); });
  const auto got = readAll(job, ms(0));
  producer.join();
  EXPECT_EQ(flat(got), sent);
  // Deltas 15 ms apart and a reader that never waits: almost all separate.
  EXPECT_GE(got.size(), sent.size() / 2);
}

TEST(DeltaReader, FinishedJobIsHandedOverWithoutWaiting) {
  GenerationJob job;
  push(job, "a");
  DeltaReader reader(job, ms(1000), ms(1000));
  std::vector<OutputDelta> out;
  EXPECT_FALSE(reader.take(out));  // the first delta goes at once
  ASSERT_EQ(out.size(), 1u);
  push(job, "b");
  push(job, "c");
  finish(job);
  const auto t0 = DeltaReader::Clock::now();
  EXPECT_TRUE(reader.take(out));
  EXPECT_LT(DeltaReader::Clock::now() - t0, ms(500));  // not the 1000 ms interval
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].text, "b");
  EXPECT_EQ(out[1].text, "c");
}

}  // namespace
