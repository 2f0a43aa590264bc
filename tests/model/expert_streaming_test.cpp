// Expert streaming under --expert-gb: loader threads read experts into slots
// while many compute threads take them. Tiny budgets (one slot, a few slots),
// many takers, O_DIRECT and page-cache reads: every expert of a list is handed
// out exactly once with the container's bytes, never more slots than the
// budget, errors reach the taker, and the model's logits keep their bits.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "k3/io/error.h"
#include "k3/model/expert_residency.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::ExpertLease;
using k3::model::ExpertResidency;
using k3::model::ExpertWeights;
using k3::model::ModelWeights;
using k3::model::ResidencyOptions;

// Bytes of one slot for this model (what the budget is divided by).
uint64_t slotBytes(const ModelWeights& w) { return ExpertResidency(w, 1, {1, true}).slotBytes(); }

// Lists of unique ascending ids with overlap between consecutive lists, so
// some experts are held (hits) and some are read (misses) or read again.
std::vector<std::vector<int>> testLists(int numExperts, size_t count, uint64_t seed) {
  std::vector<std::vector<int>> lists;
  uint64_t x = seed;
  for (size_t l = 0; l < count; ++l) {
    std::vector<int> ids;
    for (int e = 0; e < numExperts; ++e) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      if ((x >> 33) % 3 == 0) ids.push_back(e);
    }
    if (ids.empty()) ids.push_back(static_cast<int>(l) % numExperts);
    lists.push_back(ids);
  }
  return lists;
}

// The lease's expert has the container's bytes: the slot's six views are the
// mapping's, shifted by one common delta, over the same bytes.
bool sameAsMapping(const ModelWeights& w, const ExpertWeights& in, const ExpertWeights& got) {
  const auto* d1 = static_cast<const uint8_t*>(got.w1.data);
  const std::ptrdiff_t delta = d1 - static_cast<const uint8_t*>(in.w1.data);
  auto shifted = [&](const void* a, const void* b) {
    return static_cast<const uint8_t*>(b) - static_cast<const uint8_t*>(a) == delta;
  };
  if (!shifted(in.w1.scales, got.w1.scales) || !shifted(in.w2.data, got.w2.data) ||
      !shifted(in.w2.scales, got.w2.scales) || !shifted(in.w3.data, got.w3.data) ||
      !shifted(in.w3.scales, got.w3.scales))
    return false;
  const uint8_t* src = w.shards()[in.shard].mapping().data() + in.offset;
  return std::memcmp(src + delta, src, in.bytes) == 0;
}

// `takers` threads drain each list; every index is taken once with the right bytes.
void drain(const ModelWeights& w, ExpertResidency& r, const std::vector<std::vector<int>>& lists, size_t takers,
           uint64_t budget) {
  const int first = w.config().firstKDenseReplace;
  const int moeLayers = w.config().numLayers - first;
  for (size_t l = 0; l < lists.size(); ++l) {
    const int layer = first + static_cast<int>(l) % moeLayers;
    const auto& ids = lists[l];
    r.willUse(layer, ids.data(), ids.size());
    std::vector<std::atomic<int>> taken(ids.size());
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (size_t t = 0; t < takers; ++t)
      threads.emplace_back([&, t] {
        while (ExpertLease lease = r.next()) {
          const size_t i = lease.index();
          taken[i].fetch_add(1);
          const ExpertWeights& in = w.layer(layer).moeW.experts[static_cast<size_t>(ids[i])];
          if (!sameAsMapping(w, in, lease.weights())) wrong.fetch_add(1);
          if (t % 2) std::this_thread::yield();  // vary how long slots stay leased
        }
      });
    for (auto& th : threads) th.join();
    for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(taken[i].load(), 1) << "list " << l << " index " << i;
    ASSERT_EQ(wrong.load(), 0) << "list " << l;
    EXPECT_LE(r.residentBytes(), std::max(budget, r.slotBytes()));
  }
}

TEST(ExpertStreaming, ManyTakersTinyBudgetsGetEveryExpertOnceWithItsBytes) {
  auto w = ModelWeights::open(container("small", 8));
  const uint64_t slot = slotBytes(*w);
  const auto lists = testLists(w->config().numExperts, 12, 3);
  for (uint64_t slots : {1, 2, 5, 40})
    for (size_t loaders : {1, 3, 8})
      for (bool direct : {true, false}) {
        SCOPED_TRACE(testing::Message() << slots << " slots, " << loaders << " loaders, direct " << direct);
        const uint64_t budget = slots * slot;
        ExpertResidency r(*w, budget, {loaders, direct});
        ASSERT_EQ(r.slotCount(), slots);
        drain(*w, r, lists, 6, budget);
        const auto st = r.stats();
        EXPECT_GT(st.reads, 0u);
        EXPECT_EQ(st.expertBytes, st.reads * w->bytesPerExpert());
        EXPECT_GE(st.diskBytes, st.expertBytes);
        if (!direct) {
          EXPECT_EQ(st.directReads, 0u);
        }
      }
}

// Unbounded, the experts come through the same next() as streamed ones, in
// place in the mapping, those with the most rows first (ties in list order),
// each once; without rows, in list order.
TEST(ExpertStreaming, UnboundedHandsOutMappedExpertsHeaviestFirst) {
  auto w = ModelWeights::open(container("tiny", 8));
  ExpertResidency r(*w, 0);
  ASSERT_FALSE(r.bounded());
  const int layer = w->config().firstKDenseReplace;
  const std::vector<int> ids{1, 2, 4, 5, 7};
  const std::vector<size_t> rows{2, 5, 1, 5, 3};
  auto order = [&](const size_t* rowsOrNull) {
    r.willUse(layer, ids.data(), ids.size(), rowsOrNull);
    std::vector<size_t> got;
    while (ExpertLease l = r.next()) {
      EXPECT_EQ(&l.weights(), &w->layer(layer).moeW.experts[static_cast<size_t>(ids[l.index()])]);
      got.push_back(l.index());
    }
    return got;
  };
  EXPECT_EQ(order(rows.data()), (std::vector<size_t>{1, 3, 4, 0, 2}));
  EXPECT_EQ(order(nullptr), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(r.bytesRead(), ids.size() * r.bytesPerExpert());  // each expert counted at its first touch
}

// A budget that holds every expert: a list seen before is served without reads.
TEST(ExpertStreaming, HeldExpertsAreNotReadAgain) {
  auto w = ModelWeights::open(container("tiny", 8));
  const int moeLayers = w->config().numLayers - w->config().firstKDenseReplace;
  const uint64_t all = static_cast<uint64_t>(moeLayers) * static_cast<uint64_t>(w->config().numExperts);
  ExpertResidency r(*w, all * slotBytes(*w), {4, true});
  const auto lists = testLists(w->config().numExperts, 3, 9);
  drain(*w, r, lists, 3, all * slotBytes(*w));
  const uint64_t reads = r.stats().reads;
  drain(*w, r, lists, 3, all * slotBytes(*w));
  EXPECT_EQ(r.stats().reads, reads);
}

// A list abandoned half-way (a taker failed) leaves nothing behind: the next
// list is served in full.
TEST(ExpertStreaming, AbandonedListDoesNotLeakSlots) {
  auto w = ModelWeights::open(container("small", 8));
  const uint64_t budget = 3 * slotBytes(*w);
  ExpertResidency r(*w, budget, {8, true});
  const auto lists = testLists(w->config().numExperts, 6, 11);
  const int layer = w->config().firstKDenseReplace;
  for (const auto& ids : lists) {
    r.willUse(layer, ids.data(), ids.size());
    ExpertLease first = r.next();  // taken, then the list is dropped while reads are in flight
    ASSERT_TRUE(first);
  }
  drain(*w, r, lists, 4, budget);
}

// A read that fails (the shard was cut short after opening) is thrown to the
// taker of that expert; the others of the list are still handed out.
TEST(ExpertStreaming, ReadErrorReachesTheTaker) {
  namespace fs = std::filesystem;
  const std::string dir = freshDir("expert-streaming-cut");
  fs::copy(container("tiny", 8), dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  auto w = ModelWeights::open(dir);
  const int layer = w->config().firstKDenseReplace;
  const auto& experts = w->layer(layer).moeW.experts;
  const int last = w->config().numExperts - 1;
  for (bool direct : {true, false}) {
    ExpertResidency r(*w, 4 * slotBytes(*w), {2, direct});
    // Cut the file inside the last expert of the layer (the open descriptors
    // see the new size; the mapping is not touched there).
    const auto& e = experts[static_cast<size_t>(last)];
    const std::string path = w->shards()[e.shard].path();
    const auto size = fs::file_size(path);
    fs::resize_file(path, e.offset + e.bytes / 2);
    const std::vector<int> ids = {0, 1, last};
    r.willUse(layer, ids.data(), ids.size());
    size_t ok = 0, failed = 0;
    for (;;) {
      try {
        ExpertLease l = r.next();
        if (!l) break;
        ++ok;
      } catch (const k3::Error& err) {
        ++failed;
        EXPECT_NE(std::string(err.what()).find(path), std::string::npos) << err.what();
      }
    }
    fs::resize_file(path, size);
    EXPECT_EQ(ok, 2u) << "direct " << direct;
    EXPECT_EQ(failed, 1u) << "direct " << direct;
    // The failed slot was freed: the same list now succeeds.
    r.willUse(layer, ids.data(), ids.size());
    size_t again = 0;
    while (ExpertLease l = r.next()) ++again;
    EXPECT_EQ(again, 3u);
  }
  fs::remove_all(dir);
}

// The model through the streaming path: one slot, a few slots, many pool
// threads (more takers than slots) — the logits of the unbounded run, bit for bit.
TEST(ExpertStreaming, TinyBudgetsManyThreadsGiveIdenticalLogits) {
  auto w = ModelWeights::open(container("small", 8));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(24, static_cast<uint32_t>(V - 256), 17);
  const std::vector<float> unbounded = teacherForced(*w, ids, 8);
  const uint64_t slot = slotBytes(*w);
  for (uint64_t slots : {1, 3, 64})
    for (size_t threads : {1, 5}) {
      const std::vector<float> got = teacherForced(*w, ids, 8, threads, slots * slot);
      EXPECT_EQ(std::memcmp(got.data(), unbounded.data(), got.size() * sizeof(float)), 0)
          << slots << " slots, " << threads << " threads";
    }
}

}  // namespace
}  // namespace k3test::model
