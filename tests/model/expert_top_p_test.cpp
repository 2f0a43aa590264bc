// Expert top-p (k3-run --expert-top-p, model/expert_top_p): the rule on
// hand-computed routings; chunked prefill still bit-identical to
// token-at-a-time with it on; k3-run's logits against the numpy reference's
// own implementation of the rule (scripts/k3_ref.py --expert-top-p); P = 1
// identical to no flag; bad values refused in one line.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "k3/io/error.h"
#include "k3/model/expert_top_p.h"
#include "k3/model/moe_layer.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

struct Kept {
  std::vector<int> ids;
  std::vector<float> weights;
};

Kept keep(std::vector<int> ids, std::vector<float> weights, float p) {
  const int n = k3::model::keepExpertTopP(ids.data(), weights.data(), static_cast<int>(ids.size()), p);
  ids.resize(static_cast<size_t>(n));
  weights.resize(static_cast<size_t>(n));
  return {ids, weights};
}

// Weights that are exact in binary, so every running sum below is exact.
TEST(ExpertTopPRule, HandComputedCases) {
  const std::vector<int> ids = {4, 9, 3, 6};
  const std::vector<float> w = {0.125f, 0.5f, 0.125f, 0.25f};  // sorted: 9 .5, 6 .25, 3 .125, 4 .125
  // 0.7: .5 < .7, .75 >= .7 -> {9, 6} over .75.
  Kept k = keep(ids, w, 0.7f);
  EXPECT_EQ(k.ids, (std::vector<int>{9, 6}));
  EXPECT_EQ(k.weights, (std::vector<float>{0.5f / (0.75f + 1e-20f), 0.25f / (0.75f + 1e-20f)}));
  // Reaching P exactly is enough.
  EXPECT_EQ(keep(ids, w, 0.75f).ids, (std::vector<int>{9, 6}));
  EXPECT_EQ(keep(ids, w, 0.5f).ids, (std::vector<int>{9}));
  // 0.8 cuts into the tie at .125: expert 3 before 4 (the lower id), although
  // 4 came first in the routing's order.
  k = keep(ids, w, 0.8f);
  EXPECT_EQ(k.ids, (std::vector<int>{9, 6, 3}));
  EXPECT_EQ(k.weights, (std::vector<float>{0.5f / 0.875f, 0.25f / 0.875f, 0.125f / 0.875f}));
  // A tiny P keeps the heaviest one, at weight 1.
  k = keep(ids, w, 1e-9f);
  EXPECT_EQ(k.ids, (std::vector<int>{9}));
  EXPECT_EQ(k.weights, (std::vector<float>{1.0f}));
  // P = 1 keeps all four, weights unchanged (they summed to 1 exactly).
  k = keep(ids, w, 1.0f);
  EXPECT_EQ(k.ids, (std::vector<int>{9, 6, 3, 4}));
  EXPECT_EQ(k.weights, (std::vector<float>{0.5f, 0.25f, 0.125f, 0.125f}));
  // All equal: the lowest ids win.
  k = keep({7, 2, 5, 0}, {0.25f, 0.25f, 0.25f, 0.25f}, 0.5f);
  EXPECT_EQ(k.ids, (std::vector<int>{0, 2}));
  EXPECT_EQ(k.weights, (std::vector<float>{0.5f, 0.5f}));
  // A sum that never reaches P (weights short of 1): all kept, renormalised.
  k = keep({1, 2}, {0.375f, 0.5f}, 0.95f);
  EXPECT_EQ(k.ids, (std::vector<int>{2, 1}));
  EXPECT_EQ(k.weights, (std::vector<float>{0.5f / 0.875f, 0.375f / 0.875f}));
  // One expert: kept whatever P.
  EXPECT_EQ(keep({3}, {1.0f}, 0.01f).ids, (std::vector<int>{3}));
}

// On real routings (routeToken over random logits): the kept set is the
// heaviest prefix, the shortest one reaching P, and its weights sum to 1.
TEST(ExpertTopPRule, KeepsTheShortestHeaviestPrefixOnRandomRoutings) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f), up(0.05f, 0.99f);
  for (int trial = 0; trial < 300; ++trial) {
    const int E = 16 + trial % 50, k = 1 + trial % 16;
    std::vector<float> logits(static_cast<size_t>(E)), bias(static_cast<size_t>(E)), scratch(static_cast<size_t>(E));
    for (int e = 0; e < E; ++e) {
      logits[static_cast<size_t>(e)] = u(rng);
      bias[static_cast<size_t>(e)] = 0.05f * u(rng);
    }
    std::vector<int> ids(static_cast<size_t>(k));
    std::vector<float> w(static_cast<size_t>(k));
    k3::model::routeToken(logits.data(), bias.data(), E, k, ids.data(), w.data(), scratch.data());
    const float p = up(rng);
    std::vector<std::pair<float, int>> byWeight;
    for (int j = 0; j < k; ++j) byWeight.push_back({w[static_cast<size_t>(j)], ids[static_cast<size_t>(j)]});
    std::sort(byWeight.begin(), byWeight.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    const Kept got = keep(ids, w, p);
    SCOPED_TRACE("trial " + std::to_string(trial) + " k=" + std::to_string(k) + " p=" + std::to_string(p));
    ASSERT_GE(got.ids.size(), 1u);
    double before = 0, sum = 0;
    for (size_t j = 0; j < got.ids.size(); ++j) {
      ASSERT_EQ(got.ids[j], byWeight[j].second) << j;
      if (j + 1 < got.ids.size()) before += byWeight[j].first;
      sum += got.weights[j];
    }
    EXPECT_LT(before, p + 1e-6);  // one fewer would not reach P
    EXPECT_NEAR(sum, 1.0, 1e-6);
    if (got.ids.size() < static_cast<size_t>(k)) {
      EXPECT_GE(before + byWeight[got.ids.size() - 1].first, p - 1e-6);  // the kept ones do
    }
  }
}

TEST(ExpertTopPRule, OutOfRangeIsAUsageError) {
  for (float bad : {0.0f, -0.5f, 1.0001f, 2.0f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    try {
      k3::model::checkExpertTopP(bad, "--expert-top-p");
      ADD_FAILURE() << bad << " accepted";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
      EXPECT_NE(std::string(e.what()).find("--expert-top-p must be in (0, 1]"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(k3::model::checkExpertTopP(1.0f, "x"));
  EXPECT_NO_THROW(k3::model::checkExpertTopP(1e-9f, "x"));
}

std::vector<float> forcedAtTopP(const k3::model::ModelWeights& w, const std::vector<int32_t>& ids, float p, size_t chunk,
                                size_t threads, uint64_t budget = 0, double* keptMean = nullptr) {
  k3::model::SessionOptions o;
  o.chunk = chunk;
  o.threads = threads;
  o.expertBudget = budget;
  o.maxContext = ids.size() + 8;
  o.expertTopP = p;
  k3::model::Session s(w, o);
  std::vector<float> out(ids.size() * static_cast<size_t>(w.config().vocabSize));
  s.feed(ids, out.data());
  if (keptMean) *keptMean = s.expertsKeptPerTokenLayer();
  return out;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ExpertTopP, ChunkedPrefillEqualsTokenAtATimeAtP07) {
  for (const auto& [preset, bits] : {std::pair{"tiny", 8}, std::pair{"tiny", 4}, std::pair{"small", 8}}) {
    auto w = k3::model::ModelWeights::open(container(preset, bits));
    const auto& c = w->config();
    const auto ids = testIds(40, static_cast<uint32_t>(c.vocabSize - 256), 11);
    double kept = 0;
    const std::vector<float> oneByOne = forcedAtTopP(*w, ids, 0.7f, 1, 2, 0, &kept);
    SCOPED_TRACE(std::string(preset) + " bits " + std::to_string(bits));
    // The rule ran: fewer experts, other logits.
    EXPECT_LT(kept, c.numExpertsPerToken);
    EXPECT_GE(kept, 1.0);
    EXPECT_FALSE(sameBits(oneByOne, forcedAtTopP(*w, ids, 1.0f, 1, 2)));
    EXPECT_TRUE(sameBits(forcedAtTopP(*w, ids, 0.7f, 32, 2), oneByOne)) << "chunk 32";
    EXPECT_TRUE(sameBits(forcedAtTopP(*w, ids, 0.7f, 7, 2), oneByOne)) << "chunk 7";
    EXPECT_TRUE(sameBits(forcedAtTopP(*w, ids, 0.7f, 16, 1), oneByOne)) << "chunk 16, one thread";
    EXPECT_TRUE(sameBits(forcedAtTopP(*w, ids, 0.7f, 8, 2, w->expertBytesTotal() / 8), oneByOne))
        << "chunk 8, experts bounded to 1/8";
  }
}

// --json's figures for k3-run --ids over `dir`.
double jsonNumber(const std::string& out, const std::string& key) {
  const size_t at = out.find("\"" + key + "\":");
  if (at == std::string::npos) {
    ADD_FAILURE() << key << " not in " << out;
    return std::nan("");
  }
  return std::stod(out.substr(at + key.size() + 3));
}

void expectMatchesReferenceAtP07(const std::string& preset, size_t positions) {
  const std::string dir = container(preset, 16);
  auto w = k3::model::ModelWeights::open(dir);
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(positions, static_cast<uint32_t>(V - 256));
  const std::string tmp = freshDir("topp-ref-" + preset);
  RunResult r = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/run.f32", "--threads", "2",
                                   "--expert-top-p", "0.7", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  RunResult ref = run({"/usr/bin/python3", sourceDir() + "/scripts/k3_ref.py", synthSnapshot(preset, 1), "--ids",
                       idsText(ids), "--out", tmp + "/ref.f32", "--expert-top-p", "0.7", "--json"});
  ASSERT_EQ(ref.exitCode, 0) << ref.err;
  const std::vector<float> got = readF32(tmp + "/run.f32"), want = readF32(tmp + "/ref.f32");
  ASSERT_EQ(got.size(), positions * V);
  ASSERT_EQ(want.size(), positions * V);
  double worst = 0;
  for (size_t p = 0; p < positions; ++p) {
    const double rel = relL2(&got[p * V], &want[p * V], V);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-4) << preset << " position " << p;
    EXPECT_EQ(argmaxOf(&got[p * V], V), argmaxOf(&want[p * V], V)) << preset << " position " << p;
  }
  // Both kept the same experts (every position's last layer runs: all logits asked for).
  const double kept = jsonNumber(r.out, "experts_kept_mean"), refKept = jsonNumber(ref.out, "experts_kept_mean");
  EXPECT_NEAR(kept, refKept, 1e-9);
  EXPECT_LT(kept, w->config().numExpertsPerToken);
  std::printf("[measured] %s --bits 16 --expert-top-p 0.7 vs k3_ref: worst rel-L2 %.3g over %zu positions, "
              "%.3f of %d experts kept\n",
              preset.c_str(), worst, positions, kept, w->config().numExpertsPerToken);
}

TEST(ExpertTopP, TinyRunMatchesNumpyReferenceAtP07) { expectMatchesReferenceAtP07("tiny", 40); }

TEST(ExpertTopP, SmallRunMatchesNumpyReferenceAtP07) { expectMatchesReferenceAtP07("small", 16); }

TEST(ExpertTopP, OneIsIdenticalToNoFlag) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  const auto& c = w->config();
  const auto ids = testIds(30, static_cast<uint32_t>(c.vocabSize - 256), 7);
  const std::string tmp = freshDir("topp-one");
  RunResult none = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/none.f32", "--json"});
  RunResult one = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/one.f32", "--json",
                                     "--expert-top-p", "1"});
  RunResult half = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/half.f32", "--json",
                                      "--expert-top-p", "0.5"});
  ASSERT_EQ(none.exitCode, 0) << none.err;
  ASSERT_EQ(one.exitCode, 0) << one.err;
  ASSERT_EQ(half.exitCode, 0) << half.err;
  EXPECT_EQ(readFile(tmp + "/one.f32"), readFile(tmp + "/none.f32"));
  EXPECT_NE(readFile(tmp + "/half.f32"), readFile(tmp + "/none.f32"));
  int moeLayers = 0;
  for (int l = 0; l < c.numLayers; ++l) moeLayers += c.isMoeLayer(l) ? 1 : 0;
  const double k = c.numExpertsPerToken, perExpert = static_cast<double>(w->bytesPerExpert());
  EXPECT_EQ(jsonNumber(none.out, "experts_kept_mean"), k);
  EXPECT_EQ(jsonNumber(none.out, "expert_bytes_per_token"), k * moeLayers * perExpert);
  const double halfKept = jsonNumber(half.out, "experts_kept_mean");
  EXPECT_GE(halfKept, 1.0);
  EXPECT_LT(halfKept, k);
  EXPECT_NEAR(jsonNumber(half.out, "expert_bytes_per_token"), halfKept * moeLayers * perExpert, 1.0);
  EXPECT_EQ(jsonNumber(half.out, "expert_top_p"), 0.5);
}

// Every mode, --serve included, refuses a P outside (0, 1] in one line, exit 2.
TEST(ExpertTopP, BadValuesAreOneLineUsageErrors) {
  const std::string dir = container("tiny", 8);
  for (const char* bad : {"0", "-0.5", "1.5", "nan", "inf"})
    for (const std::vector<std::string>& mode :
         {std::vector<std::string>{"--ids", "1,2,3"}, std::vector<std::string>{"-p", "hi", "-n", "2"},
          std::vector<std::string>{"--serve", "--port", "0"}}) {
      std::vector<std::string> args = {dir, "--expert-top-p", bad};
      args.insert(args.end(), mode.begin(), mode.end());
      RunResult r = runTool("k3-run", args);
      EXPECT_EQ(r.exitCode, 2) << bad << " " << mode[0] << ": " << r.err;
      EXPECT_EQ(r.err, std::string("k3-run: --expert-top-p must be in (0, 1], got ") + bad + "\n") << mode[0];
      EXPECT_EQ(r.out, "") << mode[0];
    }
}

}  // namespace
}  // namespace k3test::model
