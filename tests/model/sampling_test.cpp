// Sampler semantics (spec §6.8 + top-k) against independently computed
// expectations, and reproducibility of generation (greedy and seeded).
#include <cmath>
#include <map>

#include "k3/io/error.h"
#include "k3/io/process_memory.h"
#include "k3/model/context_limits.h"
#include "k3/model/sequence_state.h"
#include "k3/model/generate.h"
#include "k3/model/sampler.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::Sampler;
using k3::model::SamplerOptions;

TEST(ModelSampler, GreedyTakesTheFirstMaximum) {
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f};
  Sampler s({0.0f, 0, 1.0f, 1}, l.size());
  EXPECT_EQ(s.sample(l.data()), 1);
}

TEST(ModelSampler, TopKOneAndTinyTopPAreGreedy) {
  const std::vector<float> l = {0.1f, 0.3f, 3.0f, 0.2f};
  Sampler k1({1.0f, 1, 1.0f, 9}, l.size());
  Sampler p0({1.0f, 0, 1e-6f, 9}, l.size());
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(k1.sample(l.data()), 2);
    EXPECT_EQ(p0.sample(l.data()), 2);
  }
}

// Frequencies over many draws approach softmax(l / T) restricted to the
// top-k / top-p set (computed here by hand, not by the sampler).
TEST(ModelSampler, DrawsFollowTheTruncatedSoftmax) {
  const std::vector<float> l = {1.0f, 2.0f, 0.0f, 1.5f, -1.0f};
  const float T = 0.8f;
  auto expected = [&](std::vector<int> keep) {
    std::map<int, double> p;
    double z = 0;
    for (int i : keep) z += std::exp((l[i] - 2.0) / T);
    for (int i : keep) p[i] = std::exp((l[i] - 2.0) / T) / z;
    return p;
  };
  auto check = [&](SamplerOptions o, const std::map<int, double>& want) {
    Sampler s(o, l.size());
    std::map<int, int> count;
    const int N = 100000;
    for (int i = 0; i < N; ++i) count[s.sample(l.data())]++;
    for (const auto& [id, c] : count) EXPECT_TRUE(want.count(id)) << "token " << id << " outside the kept set";
    for (const auto& [id, p] : want) EXPECT_NEAR(static_cast<double>(count[id]) / N, p, 0.01) << "token " << id;
  };
  check({T, 0, 1.0f, 42}, expected({0, 1, 2, 3, 4}));
  check({T, 3, 1.0f, 43}, expected({1, 3, 0}));
  // Masses in order 1,3,0,2,4 at T=0.8: .519 .278 .149 .043 .012 (cumulative
  // .519 .797 .945 …): top-p 0.8 keeps the first three.
  check({T, 0, 0.8f, 44}, expected({1, 3, 0}));
}

TEST(ModelSampler, SameSeedSameSequenceOtherSeedDiffers) {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(i * 0.7));
  auto draw = [&](uint64_t seed) {
    Sampler s({1.0f, 0, 1.0f, seed}, l.size());
    std::vector<int32_t> v;
    for (int i = 0; i < 64; ++i) v.push_back(s.sample(l.data()));
    return v;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
}

std::vector<int32_t> generateTokens(const std::string& dir, SamplerOptions so, size_t n) {
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 8, 128, 0});
  s.feed(testIds(10, 500, 77));
  Sampler sampler(so, s.vocabSize());
  k3::model::GenerateOptions g;
  g.maxTokens = n;
  return k3::model::generate(s, sampler, g, [](int32_t) {}).tokens;
}

TEST(ModelGenerate, GreedyIsDeterministicAndFollowsTeacherForcedArgmax) {
  const std::string dir = container("tiny", 8);
  const auto a = generateTokens(dir, {}, 12), b = generateTokens(dir, {}, 12);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(a, b);
  // Independent check: feeding prompt + generated tokens teacher-forced, every
  // generated token is the argmax of the previous position.
  auto w = k3::model::ModelWeights::open(dir);
  std::vector<int32_t> all = testIds(10, 500, 77);
  all.insert(all.end(), a.begin(), a.end());
  const size_t V = 768;
  const std::vector<float> logits = teacherForced(*w, all, 32);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(static_cast<int32_t>(argmaxOf(&logits[(9 + i) * V], V)), a[i]) << "step " << i;
}

TEST(ModelGenerate, SameSeedSameSample) {
  const std::string dir = container("tiny", 8);
  const SamplerOptions so{1.0f, 40, 0.95f, 1234};
  EXPECT_EQ(generateTokens(dir, so, 16), generateTokens(dir, so, 16));
  SamplerOptions other = so;
  other.seed = 99;
  EXPECT_NE(generateTokens(dir, so, 16), generateTokens(dir, other, 16));
}

TEST(ModelGenerate, StopsAtAStopIdAndKeepsItInTheStateWhenAsked) {
  const std::string dir = container("tiny", 8);
  const auto free = generateTokens(dir, {}, 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 8, 128, 0});
  const auto prompt = testIds(10, 500, 77);
  s.feed(prompt);
  Sampler sampler({}, s.vocabSize());
  k3::model::GenerateOptions g;
  g.maxTokens = 8;
  g.stopIds = {free[3]};
  g.feedStopToken = true;
  const auto r = k3::model::generate(s, sampler, g, [](int32_t) {});
  // It stops at the first occurrence of the stop id.
  size_t first = 0;
  while (free[first] != free[3]) ++first;
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(free.begin(), free.begin() + static_cast<long>(first) + 1));
  EXPECT_EQ(s.history().size(), prompt.size() + first + 1);
}

TEST(ModelGenerate, CliSameSeedSameTextAndGreedyRepeats) {
  const std::string dir = container("tiny", 8);
  auto runIt = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {dir, "-p", "hello world", "-n", "12", "--json"};
    if (extra.empty()) args.insert(args.end(), {"--temp", "0"});
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = runTool("k3-run", args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    const size_t at = r.out.find("\"tokens\":");
    return r.out.substr(at, r.out.find(']', at) - at);
  };
  EXPECT_EQ(runIt({}), runIt({}));
  EXPECT_EQ(runIt({"--temp", "0.9", "--seed", "5", "--top-k", "50"}),
            runIt({"--temp", "0.9", "--seed", "5", "--top-k", "50"}));
  EXPECT_NE(runIt({"--temp", "1.5", "--seed", "5"}), runIt({"--temp", "1.5", "--seed", "6"}));
}

// --prompt-ids feeds the ids as the prompt (no BOS added) and generates as
// -p does: greedy (--temp 0), the in-process session's tokens, whatever --chunk (a
// prompt of 10 in chunks of 4 runs the last layer cache-only twice).
TEST(ModelGenerate, CliPromptIdsGenerateLikeTheSession) {
  const std::string dir = container("tiny", 8);
  const auto prompt = testIds(10, 500, 77);
  const auto want = generateTokens(dir, {}, 12);
  auto list = [](const char* key, const std::vector<int32_t>& v) {
    std::string s = std::string("\"") + key + "\":[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(v[i]);
    }
    return s;
  };
  const std::string wantJson = list("tokens", want), promptJson = list("prompt_ids", prompt);
  for (const char* chunk : {"4", "64"}) {
    RunResult r = runTool("k3-run", {dir, "--prompt-ids", idsText(prompt), "-n", "12", "--chunk", chunk, "--json", "--temp", "0"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find(wantJson + "]"), std::string::npos) << "--chunk " << chunk << ": " << r.out;
    EXPECT_NE(r.out.find(promptJson + "]"), std::string::npos) << r.out;
  }
  RunResult text = runTool("k3-run", {dir, "--prompt-ids", idsText(prompt), "-n", "4"});
  EXPECT_EQ(text.exitCode, 0) << text.err;
  EXPECT_EQ(runTool("k3-run", {dir, "--prompt-ids", "1,2", "-p", "hello"}).exitCode, 2);
  EXPECT_EQ(runTool("k3-run", {dir, "--prompt-ids", "1,2", "--ids", "1,2"}).exitCode, 2);
  RunResult bad = runTool("k3-run", {dir, "--prompt-ids", "1,x"});
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("--prompt-ids"), std::string::npos) << bad.err;
}

TEST(ModelSampler, OptionsOutsideTheirRangesAreUsageErrors) {
  auto message = [](SamplerOptions o) {
    try {
      k3::model::checkSamplerOptions(o);
    } catch (const ::k3::Error& e) {
      EXPECT_EQ(e.kind(), ::k3::ErrorKind::Usage);
      return std::string(e.what());
    }
    return std::string("ok");
  };
  EXPECT_EQ(message({0.0f, 0, 1.0f, 0}), "ok");
  EXPECT_EQ(message({100.0f, 1 << 24, 0.0f, 0}), "ok");
  EXPECT_EQ(message({-1.0f, 0, 1.0f, 0}), "--temp -1: must be a number in [0, 100] (0 = greedy)");
  EXPECT_EQ(message({std::nanf(""), 0, 1.0f, 0}).rfind("--temp nan: ", 0), 0u);
  EXPECT_EQ(message({INFINITY, 0, 1.0f, 0}).rfind("--temp inf: ", 0), 0u);
  EXPECT_EQ(message({1.0f, 0, 1.5f, 0}), "--top-p 1.5: must be a number in [0, 1] (1 = all)");
  EXPECT_EQ(message({1.0f, 0, std::nanf(""), 0}).rfind("--top-p nan: ", 0), 0u);
  EXPECT_EQ(message({1.0f, -5, 1.0f, 0}), "--top-k -5: must be in [0, 16777216] (0 = all)");
}

TEST(ModelGenerate, MaxTokensIsClampedToTheRoomLeftInTheContext) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 8, 16, 0});  // room for 16 positions
  s.feed(testIds(10, 500, 77));
  Sampler sampler({}, s.vocabSize());
  k3::model::GenerateOptions g;
  g.maxTokens = SIZE_MAX;  // nothing reserved for it, no context error
  const auto r = k3::model::generate(s, sampler, g, [](int32_t) {});
  if (!r.stopped) {
    EXPECT_EQ(r.tokens.size(), 7u);  // 6 fed back (10 + 6 = 16) and the last one not
  }
  EXPECT_LE(s.position(), 16u);
}

// The estimate is what a Session really allocates (within 25 %): measured as
// the resident growth of sessions whose MLA caches dominate.
TEST(ModelContextLimits, EstimateMatchesWhatASessionAllocates) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  for (size_t ctx : {size_t{200000}, size_t{400000}}) {
    const uint64_t before = k3::currentRssBytes();
    k3::model::Session s(*w, {1, 64, ctx, 0});
    const double grown = static_cast<double>(k3::currentRssBytes() - before);
    const double est = static_cast<double>(k3::model::sessionBytesEstimate(w->config(), ctx, 64, 1));
    std::printf("[measured] tiny ctx %zu: session %.1f MB resident, estimate %.1f MB\n", ctx, grown / 1e6, est / 1e6);
    EXPECT_GT(grown, 0.75 * est);
    EXPECT_LT(grown, 1.25 * est);
  }
}

TEST(ModelContextLimits, RefusesPastTheModelAndTheMemoryWithTheBytesNeeded) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::ModelConfig c = w->config();
  ASSERT_EQ(c.maxPositionEmbeddings, 1048576);
  auto message = [&](size_t ctx, size_t chunk, uint64_t memory, bool given = true) {
    try {
      k3::model::checkContextLimits(c, {ctx, chunk, 1, given}, memory);
    } catch (const ::k3::Error& e) {
      EXPECT_EQ(e.kind(), ::k3::ErrorKind::Usage);
      return std::string(e.what());
    }
    return std::string("ok");
  };
  const uint64_t lots = uint64_t{1} << 40;
  EXPECT_EQ(message(1048576, 128, lots), "ok");
  EXPECT_EQ(message(1048577, 128, lots), "--ctx 1048577: more than the model's max_position_embeddings 1048576");
  EXPECT_EQ(message(4096, 1048577, lots), "--chunk 1048577: more than the model's max_position_embeddings 1048576");
  EXPECT_EQ(message(0, 128, lots), "--ctx 0: must be at least 1");
  const uint64_t need = k3::model::sessionBytesEstimate(c, 100000, 128, 1);
  EXPECT_EQ(message(100000, 128, need), "ok");
  EXPECT_EQ(message(100000, 128, need - 1).rfind("--ctx 100000 with --chunk 128: the session would need ", 0), 0u);
  EXPECT_NE(message(100000, 128, need - 1, false).find("the context (the ids given) 100000"), std::string::npos);
  // A chunk longer than the context is counted as the context.
  EXPECT_EQ(message(100, 100000, k3::model::sessionBytesEstimate(c, 100, 100, 1)), "ok");
  // --serve --parallel: every further sequence holds its own state at --ctx
  // (KDA states, MLA caches, tokens) and a row of logits; refused naming
  // --parallel x --ctx and one sequence's size.
  const uint64_t perSequence = k3::model::SequenceState::bytesFor(c, 100000) + uint64_t(c.vocabSize) * 4;
  auto parallelMessage = [&](size_t parallel, uint64_t memory) {
    try {
      k3::model::checkContextLimits(c, {100000, 128, 1, true, parallel}, memory);
    } catch (const ::k3::Error& e) {
      return std::string(e.what());
    }
    return std::string("ok");
  };
  EXPECT_EQ(parallelMessage(4, need + 3 * perSequence), "ok");
  EXPECT_EQ(parallelMessage(4, need + 3 * perSequence - 1).rfind("--parallel 4 x --ctx 100000: 4 sequences of ", 0), 0u)
      << parallelMessage(4, need + 3 * perSequence - 1);
  // --serve's state checkpoints (the RAM tier and the queue to the disk
  // tier) count too, named by their flag when they are what does not fit.
  auto cacheMessage = [&](uint64_t cacheBytes, uint64_t memory) {
    try {
      k3::model::ContextRequest r{100000, 128, 1, true, 4};
      r.stateCacheBytes = cacheBytes;
      k3::model::checkContextLimits(c, r, memory);
    } catch (const ::k3::Error& e) {
      return std::string(e.what());
    }
    return std::string("ok");
  };
  const uint64_t sessions = need + 3 * perSequence;
  EXPECT_EQ(cacheMessage(uint64_t{2} << 30, sessions + (uint64_t{2} << 30)), "ok");
  EXPECT_EQ(cacheMessage(uint64_t{2} << 30, sessions + (uint64_t{2} << 30) - 1).rfind("--state-cache-gb: up to 2.0 GiB of checkpoints in RAM", 0), 0u)
      << cacheMessage(uint64_t{2} << 30, sessions + (uint64_t{2} << 30) - 1);
  EXPECT_EQ(cacheMessage(uint64_t{2} << 30, sessions - 1).rfind("--parallel 4 x --ctx 100000", 0), 0u);
  {  // the per-sequence bytes are what a SequenceState holds
    k3::model::SequenceState s(c, 1000);
    uint64_t held = s.lastLogits.size() * 4 + s.tokens.capacity() * 4;
    for (const auto& k : s.kda) held += (k.S.size() + k.conv.size()) * 4;
    for (const auto& m : s.mla) held += (m.L.size() + m.R.size()) * 4;
    EXPECT_EQ(k3::model::SequenceState::bytesFor(c, 1000), held);
  }
  c.maxPositionEmbeddings = 0;  // not in the config: only the memory bounds it
  EXPECT_NE(message(size_t{1} << 34, 128, lots).find("of memory, more than this machine's 1024.0 GiB"),
            std::string::npos);
}

}  // namespace
}  // namespace k3test::model
