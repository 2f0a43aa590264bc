// routeToken (spec 6.6 steps 1-3) against the rule written out the slow way
// here: topK rounds, each taking the highest σ(logit) + bias not yet taken,
// ties to the lower id; weights σ(logit) of the picks over their sum.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "k3/model/moe_layer.h"

namespace {

struct Routed {
  std::vector<int> ids;
  std::vector<float> weights;
};

float sigmoidRef(float x) { return 1.0f / (1.0f + std::exp(-x)); }

Routed greedyRounds(const std::vector<float>& logits, const std::vector<float>& bias, int k) {
  const int E = static_cast<int>(logits.size());
  std::vector<float> score(logits.size());
  std::vector<bool> taken(logits.size(), false);
  for (int e = 0; e < E; ++e) score[e] = sigmoidRef(logits[e]) + bias[e];
  Routed r;
  float sum = 0.0f;
  for (int round = 0; round < k; ++round) {
    int best = -1;
    for (int e = 0; e < E; ++e)
      if (!taken[e] && (best < 0 || score[e] > score[best])) best = e;
    taken[best] = true;
    r.ids.push_back(best);
    r.weights.push_back(sigmoidRef(logits[best]));
    sum += r.weights.back();
  }
  for (float& w : r.weights) w /= (sum + 1e-20f);
  return r;
}

Routed route(const std::vector<float>& logits, const std::vector<float>& bias, int k) {
  Routed r{std::vector<int>(k), std::vector<float>(k)};
  std::vector<float> scratch(logits.size());
  k3::model::routeToken(logits.data(), bias.data(), static_cast<int>(logits.size()), k, r.ids.data(),
                        r.weights.data(), scratch.data());
  return r;
}

TEST(RouteToken, MatchesGreedyRoundsWithTiesToTheLowerId) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::uniform_int_distribution<int> level(-3, 3);
  for (int trial = 0; trial < 400; ++trial) {
    const int E = 1 + trial % 97;
    const int k = 1 + trial % std::min(E, 17);
    std::vector<float> logits(E), bias(E, 0.0f);
    const bool ties = trial % 2 == 0;  // few distinct scores: many exact ties
    for (int e = 0; e < E; ++e) {
      logits[e] = ties ? float(level(rng)) : u(rng);
      if (!ties && trial % 3 == 0) bias[e] = 0.1f * u(rng);
    }
    if (trial % 5 == 0) logits[E - 1] = -INFINITY;  // σ = 0
    SCOPED_TRACE("trial " + std::to_string(trial) + " E=" + std::to_string(E) + " k=" + std::to_string(k));
    Routed want = greedyRounds(logits, bias, k), got = route(logits, bias, k);
    ASSERT_EQ(got.ids, want.ids);
    for (int i = 0; i < k; ++i) ASSERT_EQ(got.weights[i], want.weights[i]) << i;
  }
}

TEST(RouteToken, HandPickedOrder) {
  // scores 0.5+b: ids 3 and 1 tie at the top (1 first), then 4, then 0 vs 2 tie (0 first).
  std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<float> bias = {0.1f, 0.3f, 0.1f, 0.3f, 0.2f};
  Routed r = route(logits, bias, 4);
  EXPECT_EQ(r.ids, (std::vector<int>{1, 3, 4, 0}));
  for (float w : r.weights) EXPECT_FLOAT_EQ(w, 0.25f);
}

}  // namespace
