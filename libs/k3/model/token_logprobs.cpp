#include "k3/model/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace k3::model {

TokenLogprob LogprobCalculator::compute(const float* logits, int32_t chosen, size_t topN) {
  float maxL = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < vocab_; ++i) maxL = std::max(maxL, logits[i]);
  double sum = 0.0;
  for (size_t i = 0; i < vocab_; ++i) sum += std::exp(static_cast<double>(logits[i]) - maxL);
  // log-softmax(l)_i = l_i − max − log Σ exp(l_j − max), in double, then float.
  const double logZ = static_cast<double>(maxL) + std::log(sum);
  auto lp = [&](int32_t id) { return static_cast<float>(static_cast<double>(logits[id]) - logZ); };
  TokenLogprob r;
  r.id = chosen;
  r.logprob = lp(chosen);
  topN = std::min(topN, vocab_);
  if (topN > 0) {
    order_.resize(vocab_);
    for (size_t i = 0; i < vocab_; ++i) order_[i] = static_cast<int32_t>(i);
    auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(topN), order_.end(), better);
    for (size_t i = 0; i < topN; ++i) r.top.emplace_back(order_[i], lp(order_[i]));
  }
  return r;
}

}  // namespace k3::model
