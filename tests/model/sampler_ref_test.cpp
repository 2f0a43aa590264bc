// logit_bias, the three penalties, log-probabilities and the sampler's
// candidate set (top-k, top-p, min-p) against scripts/sampler_ref.py, an
// independent numpy reference, on random logits and histories.
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "k3/io/error.h"
#include "k3/model/logit_processors.h"
#include "k3/model/sampler.h"
#include "k3/model/token_logprobs.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::LogitProcessor;
using k3::model::LogitProcessorOptions;

struct Case {
  std::vector<float> logits;
  std::vector<int32_t> prompt, output;
  LogitProcessorOptions proc;
  k3::model::SamplerOptions samp;
};

std::vector<Case> randomCases(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uni = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t k) { return static_cast<size_t>(rng() % k); };
  std::vector<Case> cases;
  for (size_t c = 0; c < n; ++c) {
    Case x;
    const size_t V = 20 + pick(300);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (size_t i = 0; i < V; ++i) x.logits.push_back(normal(rng));
    for (size_t i = 0; i < V / 10; ++i) x.logits[pick(V)] = x.logits[pick(V)];  // ties
    for (size_t i = 0, m = pick(30); i < m; ++i) x.prompt.push_back(static_cast<int32_t>(pick(V)));
    for (size_t i = 0, m = pick(40); i < m; ++i)  // repeats: a few ids often
      x.output.push_back(static_cast<int32_t>(pick(3) ? pick(8) : pick(V)));
    // Each option on in about half the cases, so they also act alone.
    if (pick(2)) x.proc.presencePenalty = static_cast<float>(uni(-2, 2));
    if (pick(2)) x.proc.frequencyPenalty = static_cast<float>(uni(-2, 2));
    if (pick(2)) x.proc.repetitionPenalty = static_cast<float>(uni(0.5, 2.5));
    if (pick(2))
      for (size_t i = 0, m = 1 + pick(5); i < m; ++i)
        x.proc.logitBias.emplace_back(static_cast<int32_t>(i * (V / 6) + pick(V / 6)), static_cast<float>(uni(-100, 100)));
    x.samp.temperature = pick(5) ? static_cast<float>(uni(0.2, 1.6)) : 0.0f;
    x.samp.topK = pick(2) ? static_cast<int>(1 + pick(V)) : 0;
    x.samp.topP = pick(2) ? static_cast<float>(uni(0.3, 0.99)) : 1.0f;
    x.samp.minP = pick(2) ? static_cast<float>(uni(0.01, 0.4)) : 0.0f;
    cases.push_back(std::move(x));
  }
  return cases;
}

std::string casesJson(const std::vector<Case>& cases) {
  std::ostringstream j;
  j.precision(9);
  auto ids = [&](const std::vector<int32_t>& v) {
    j << '[';
    for (size_t i = 0; i < v.size(); ++i) j << (i ? "," : "") << v[i];
    j << ']';
  };
  j << '[';
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& x = cases[c];
    j << (c ? "," : "") << "{\"logits\":[";
    for (size_t i = 0; i < x.logits.size(); ++i) j << (i ? "," : "") << x.logits[i];
    j << "],\"prompt\":";
    ids(x.prompt);
    j << ",\"output\":";
    ids(x.output);
    j << ",\"presence\":" << x.proc.presencePenalty << ",\"frequency\":" << x.proc.frequencyPenalty
      << ",\"repetition\":" << x.proc.repetitionPenalty << ",\"bias\":[";
    for (size_t i = 0; i < x.proc.logitBias.size(); ++i)
      j << (i ? "," : "") << '[' << x.proc.logitBias[i].first << ',' << x.proc.logitBias[i].second << ']';
    j << "],\"temperature\":" << x.samp.temperature << ",\"top_k\":" << x.samp.topK << ",\"top_p\":" << x.samp.topP
      << ",\"min_p\":" << x.samp.minP << '}';
  }
  j << ']';
  return j.str();
}

template <typename T>
std::vector<T> numbers(const std::string& line) {
  std::istringstream in(line);
  std::vector<T> v;
  for (T x; in >> x;) v.push_back(x);
  return v;
}

TEST(ModelSamplerReference, ProcessingLogprobsAndCandidatesMatchTheNumpyReference) {
  // The float options are written with 9 significant digits: read them back
  // the same way so both sides use the same float values.
  std::vector<Case> cases = randomCases(300, 20261205);
  const std::string dir = freshDir("sampler_ref");
  writeFile(dir + "/cases.json", casesJson(cases));
  RunResult ref = run({"/usr/bin/python3", sourceDir() + "/scripts/sampler_ref.py", dir + "/cases.json"});
  ASSERT_EQ(ref.exitCode, 0) << ref.err;
  std::istringstream lines(ref.out);
  size_t changed = 0, truncated = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& x = cases[c];
    const size_t V = x.logits.size();
    std::string l1, l2, l3, l4;
    ASSERT_TRUE(std::getline(lines, l1) && std::getline(lines, l2) && std::getline(lines, l3) && std::getline(lines, l4));
    const auto wantLogits = numbers<double>(l1), wantLogprobs = numbers<double>(l2), wantP = numbers<double>(l4);
    const auto wantIds = numbers<int32_t>(l3);
    ASSERT_EQ(wantLogits.size(), V);

    LogitProcessor proc(x.proc, V);
    proc.addPrompt(x.prompt);
    for (int32_t id : x.output) proc.addGenerated(id);
    std::vector<float> got = x.logits;
    proc.apply(got.data());
    for (size_t i = 0; i < V; ++i) {
      EXPECT_NEAR(got[i], wantLogits[i], 1e-6 * std::max(1.0, std::fabs(wantLogits[i]))) << "case " << c << " id " << i;
      changed += got[i] != x.logits[i];
    }

    // All V log-probabilities, in the reference's order (ties: lower id first).
    k3::model::LogprobCalculator lc(V);
    const k3::model::TokenLogprob lp = lc.compute(got.data(), 0, V);
    EXPECT_NEAR(lp.logprob, wantLogprobs[0], 1e-5) << "case " << c;
    ASSERT_EQ(lp.top.size(), V);
    for (size_t r = 0; r < V; ++r) {
      const auto [id, value] = lp.top[r];
      EXPECT_NEAR(value, wantLogprobs[static_cast<size_t>(id)], 1e-5) << "case " << c << " rank " << r;
      if (r) {
        EXPECT_TRUE(got[static_cast<size_t>(lp.top[r - 1].first)] >= got[static_cast<size_t>(id)]) << "case " << c;
      }
    }

    k3::model::Sampler s(x.samp, V);
    const auto cand = s.candidates(got.data());
    ASSERT_EQ(cand.size(), wantIds.size()) << "case " << c;
    truncated += cand.size() < V;
    for (size_t r = 0; r < cand.size(); ++r) {
      EXPECT_EQ(cand[r].first, wantIds[r]) << "case " << c << " rank " << r;
      EXPECT_NEAR(cand[r].second, wantP[r], 1e-5) << "case " << c << " rank " << r;
    }
  }
  // The cases exercised the code: logits moved, candidate sets were cut.
  EXPECT_GT(changed, 1000u);
  EXPECT_GT(truncated, 100u);
}

// Greedy (temperature 0) samples the argmax of the processed logits: each
// penalty, alone, turns a token the model would repeat into another one.
TEST(ModelSamplerReference, EachPenaltyMovesTheGreedyChoiceOffARepeatedToken) {
  const std::vector<float> l = {1.0f, 3.0f, 2.6f, -1.0f};  // greedy: 1
  const std::vector<int32_t> out = {1, 1};                  // 1 generated twice
  auto greedyWith = [&](LogitProcessorOptions o) {
    LogitProcessor p(o, l.size());
    for (int32_t id : out) p.addGenerated(id);
    std::vector<float> x = l;
    p.apply(x.data());
    return k3::model::Sampler::argmax(x.data(), x.size());
  };
  EXPECT_EQ(greedyWith({}), 1);
  EXPECT_EQ(greedyWith({.presencePenalty = 0.5f}), 2);    // 3 − 0.5 < 2.6
  EXPECT_EQ(greedyWith({.presencePenalty = 0.3f}), 1);    // 3 − 0.3 > 2.6
  EXPECT_EQ(greedyWith({.frequencyPenalty = 0.25f}), 2);  // 3 − 2·0.25 < 2.6
  EXPECT_EQ(greedyWith({.frequencyPenalty = 0.15f}), 1);  // 3 − 2·0.15 > 2.6
  EXPECT_EQ(greedyWith({.repetitionPenalty = 1.2f}), 2);  // 3 / 1.2 < 2.6
  EXPECT_EQ(greedyWith({.repetitionPenalty = 1.1f}), 1);  // 3 / 1.1 > 2.6
  EXPECT_EQ(greedyWith({.logitBias = {{3, 5.0f}}}), 3);   // −1 + 5 > 3
}

TEST(ModelSamplerReference, OptionsOutsideTheirRangesAreUsageErrors) {
  auto message = [](LogitProcessorOptions o) {
    try {
      k3::model::checkLogitProcessorOptions(o, 100);
    } catch (const k3::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({.presencePenalty = 2.5f}).find("--presence-penalty 2.5"), std::string::npos);
  EXPECT_NE(message({.frequencyPenalty = -3.0f}).find("--frequency-penalty -3"), std::string::npos);
  EXPECT_NE(message({.repetitionPenalty = 0.0f}).find("--repeat-penalty 0"), std::string::npos);
  EXPECT_NE(message({.repetitionPenalty = NAN}).find("--repeat-penalty"), std::string::npos);
  EXPECT_NE(message({.logitBias = {{100, 1.0f}}}).find("--logit-bias 100: not a token id"), std::string::npos);
  EXPECT_NE(message({.logitBias = {{5, 101.0f}}}).find("--logit-bias 5=101"), std::string::npos);
  EXPECT_EQ(message({.presencePenalty = -2.0f, .frequencyPenalty = 2.0f, .repetitionPenalty = 1.3f,
                     .logitBias = {{99, -100.0f}}}),
            "");
}

}  // namespace
}  // namespace k3test::model
