// Chunked prefill (layer-major, batched matmuls, each unique expert once per
// chunk) must give exactly the bits of token-at-a-time decoding, whatever the
// chunk size, the thread count, or how the input is split across feed calls;
// and bounding resident experts must not change a single bit either.
#include <sys/mman.h>

#include "k3/kernels/cpu_features.h"
#include "k3/model/expert_residency.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expectChunkInvariant(const std::string& preset, int bits) {
  auto w = k3::model::ModelWeights::open(container(preset, bits));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(40, static_cast<uint32_t>(V - 256), 11);
  const std::vector<float> oneByOne = teacherForced(*w, ids, 1, 2, 0, 1);  // decode steps
  EXPECT_TRUE(sameBits(teacherForced(*w, ids, 32), oneByOne)) << preset << " bits " << bits << " chunk 32";
  EXPECT_TRUE(sameBits(teacherForced(*w, ids, 7), oneByOne)) << preset << " bits " << bits << " chunk 7";
  EXPECT_TRUE(sameBits(teacherForced(*w, ids, 16, 2, 0, 5), oneByOne)) << "chunk 16, fed 5 at a time";
  EXPECT_TRUE(sameBits(teacherForced(*w, ids, 32, 1), oneByOne)) << "one thread";
}

TEST(ModelChunking, TinyChunkedPrefillEqualsTokenAtATime) {
  expectChunkInvariant("tiny", 16);
  expectChunkInvariant("tiny", 8);
  expectChunkInvariant("tiny", 4);
}

TEST(ModelChunking, SmallChunkedPrefillEqualsTokenAtATime) { expectChunkInvariant("small", 8); }

// k3-run --ids feeds the session one --chunk at a time (it once fed 32
// whatever --chunk said): the passes it reports follow --chunk, and the
// logits do not depend on it.
TEST(ModelChunking, RunIdsHonoursChunk) {
  const std::string dir = container("tiny", 8);
  const auto ids = testIds(100, 500, 4);
  const std::string tmp = freshDir("runchunk");
  for (auto [chunk, passes] : {std::pair{"1", 100}, std::pair{"7", 15}, std::pair{"64", 2}}) {
    RunResult r = runTool("k3-run", {dir, "--ids", idsText(ids), "--chunk", chunk, "--json",
                                     "--logits-out", tmp + "/" + chunk + ".f32"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("\"prefill_passes\":" + std::to_string(passes) + ","), std::string::npos)
        << "--chunk " << chunk << ": " << r.out;
    // The kernels' ISA is reported, and it is the one this process would pick.
    EXPECT_NE(r.out.find(std::string("\"isa\":\"") + k3::kernels::isaName(k3::kernels::bestIsa()) + "\""),
              std::string::npos)
        << r.out;
  }
  EXPECT_EQ(readFile(tmp + "/7.f32"), readFile(tmp + "/1.f32"));
  EXPECT_EQ(readFile(tmp + "/64.f32"), readFile(tmp + "/1.f32"));
}

// The head is only computed for the last position when not all are asked for.
TEST(ModelChunking, LastLogitsEqualTheLastRowOfAllLogits) {
  auto w = k3::model::ModelWeights::open(container("tiny", 8));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(37, 500, 3);
  const std::vector<float> all = teacherForced(*w, ids, 8);
  k3::model::Session s(*w, {2, 8, 64, 0});
  s.feed(ids);
  EXPECT_EQ(std::memcmp(s.lastLogits(), &all[(ids.size() - 1) * V], V * sizeof(float)), 0);
  EXPECT_EQ(s.position(), ids.size());
  EXPECT_EQ(s.history(), ids);
}

// Without all logits the last layer runs its attention outputs and MLP
// only for the rows the head reads (none in a prompt's earlier chunks, the
// last position in its final one), yet caches every position: decoding on
// from such a prompt gives the teacher-forced bits, exact and int8
// activations alike.
TEST(ModelChunking, PrunedLastLayerStillCachesEveryPosition) {
  for (bool int8 : {false, true}) {
    k3::model::WeightOptions o;
    o.int8Activations = int8;
    auto w = k3::model::ModelWeights::open(container("small", 8), o);
    ASSERT_FALSE(w->config().isKdaLayer(w->config().numLayers - 1)) << "the last layer is an MLA layer";
    const size_t V = static_cast<size_t>(w->config().vocabSize);
    const auto ids = testIds(37, static_cast<uint32_t>(V - 256), 5), more = testIds(4, static_cast<uint32_t>(V - 256), 6);
    std::vector<int32_t> both = ids;
    both.insert(both.end(), more.begin(), more.end());
    const std::vector<float> all = teacherForced(*w, both, 8);
    k3::model::Session s(*w, {2, 8, 64, 0});
    s.feed(ids);  // five chunks: four cache-only passes of the last layer, then one row
    EXPECT_EQ(std::memcmp(s.lastLogits(), &all[(ids.size() - 1) * V], V * sizeof(float)), 0) << "int8 " << int8;
    for (size_t j = 0; j < more.size(); ++j) {
      s.feed(std::span<const int32_t>(more).subspan(j, 1));
      EXPECT_EQ(std::memcmp(s.lastLogits(), &all[(ids.size() + j) * V], V * sizeof(float)), 0)
          << "int8 " << int8 << ", decode step " << j;
    }
  }
}

TEST(ModelChunking, ResetForgetsTheState) {
  auto w = k3::model::ModelWeights::open(container("tiny", 8));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto a = testIds(12, 500, 1), b = testIds(9, 500, 2);
  k3::model::Session s(*w, {2, 4, 64, 0});
  s.feed(a);
  s.reset();
  s.feed(b);
  std::vector<float> afterReset(s.lastLogits(), s.lastLogits() + V);
  k3::model::Session fresh(*w, {2, 4, 64, 0});
  fresh.feed(b);
  EXPECT_EQ(std::memcmp(afterReset.data(), fresh.lastLogits(), V * sizeof(float)), 0);
}

// --expert-gb at a quarter of the expert bytes, and at 1/32 (where experts
// are evicted and read again): identical logits, slots never over budget.
TEST(ModelResidency, BoundedExpertMemoryGivesIdenticalLogits) {
  auto w = k3::model::ModelWeights::open(container("small", 8));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(160, static_cast<uint32_t>(V - 256), 21);
  const std::vector<float> unbounded = teacherForced(*w, ids, 8);
  for (uint64_t div : {4, 32}) {
    const uint64_t budget = w->expertBytesTotal() / div;
    ASSERT_GT(budget, w->bytesPerExpert());
    k3::model::SessionOptions o{2, 8, 256, budget};
    k3::model::Session bounded(*w, o);
    std::vector<float> got(ids.size() * V);
    bounded.feed(ids, got.data());
    EXPECT_TRUE(bounded.residency().bounded());
    EXPECT_LE(bounded.residency().residentBytes(), budget);
    if (div == 32) {
      EXPECT_GT(bounded.residency().bytesRead(), budget);  // it had to read experts again
    }
    EXPECT_TRUE(sameBits(got, unbounded)) << "budget 1/" << div;
  }
}

// Peak RSS of a bounded run on `small` stays within budget + the non-expert
// bytes + runtime overhead, measured on the k3-run process.
TEST(ModelResidency, SmallBoundedRunStaysWithinBudgetPlusDenseWeights) {
  const std::string dir = container("small", 8);
  auto w = k3::model::ModelWeights::open(dir);
  const uint64_t quarter = w->expertBytesTotal() / 4;
  const uint64_t dense = w->mappedBytesTotal() - w->expertBytesTotal();
  const auto ids = testIds(160, static_cast<uint32_t>(w->config().vocabSize - 256), 4);
  auto peak = [&](double gb) {
    RunResult r = runTool("k3-run", {dir, "--ids", idsText(ids), "--json", "--expert-gb", std::to_string(gb)});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    const size_t at = r.out.find("\"peak_rss_bytes\":");
    return at == std::string::npos ? 0.0 : std::stod(r.out.substr(at + 17));
  };
  const double bounded = peak(static_cast<double>(quarter) / 1e9);
  const double unbounded = peak(0);
  std::printf("[measured] small: experts %.1f MB, budget %.1f MB, dense %.1f MB, peak RSS bounded %.1f MB, "
              "unbounded %.1f MB\n",
              w->expertBytesTotal() / 1e6, quarter / 1e6, dense / 1e6, bounded / 1e6, unbounded / 1e6);
#ifndef __SANITIZE_ADDRESS__  // ASan's shadow memory and quarantine add hundreds of MB
  EXPECT_LE(bounded, static_cast<double>(quarter + dense) + 48e6);  // + allocator, code, buffers
#endif
  EXPECT_LT(bounded, unbounded);
}

}  // namespace
}  // namespace k3test::model
