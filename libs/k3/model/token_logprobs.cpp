#include "k3/model/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace k3::model {

TokenLogprob LogprobCalculator::compute(const float* logits, int32_t chosen, size_t topN) {
  float maxL = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < vocab_; ++i) maxL = std::max(maxL, logits[i]);
  // Σ exp(l − max): float exponentials (each ≤ 1, relative error ~1e-7),
  // summed in double.
  double sum = 0.0;
  for (size_t i = 0; i < vocab_; ++i) sum += std::exp(logits[i] - maxL);
  // log-softmax(l)_i = l_i − max − log Σ exp(l_j − max), in double, then float.
  const double logZ = static_cast<double>(maxL) + std::log(sum);
  auto lp = [&](int32_t id) { return static_cast<float>(static_cast<double>(logits[id]) - logZ); };
  TokenLogprob r;
  r.id = chosen;
  r.logprob = lp(chosen);
  topN = std::min(topN, vocab_);
  if (topN > 0) {
    // One pass keeping the N best in order (descending; ties: lower id first,
    // which the scan order gives by inserting only on a strictly larger logit).
    auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    order_.clear();
    for (size_t i = 0; i < vocab_; ++i) {
      const auto id = static_cast<int32_t>(i);
      if (order_.size() == topN && !better(id, order_.back())) continue;
      auto at = std::upper_bound(order_.begin(), order_.end(), id, better);
      order_.insert(at, id);
      if (order_.size() > topN) order_.pop_back();
    }
    for (int32_t id : order_) r.top.emplace_back(id, lp(id));
  }
  return r;
}

}  // namespace k3::model
