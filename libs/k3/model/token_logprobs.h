// Log-probabilities of one step: log-softmax of the logits a token is drawn
// from (after bias, penalties and any mask; before temperature, top-k/top-p
// and min-p, as OpenAI documents its logprobs), for the chosen token and the
// N most likely ones.
// Thread-safety: pure functions plus a reusable scratch object (one per sequence).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace k3::model {

inline constexpr size_t kMaxTopLogprobs = 20;  // OpenAI's and vLLM's default bound

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;  // −inf for a masked token
  std::vector<std::pair<int32_t, float>> top;  // the N most likely, descending (ties: lower id first)
};

class LogprobCalculator {
 public:
  explicit LogprobCalculator(size_t vocabSize) : vocab_(vocabSize) {}
  // log-softmax over `logits` [vocab]: the chosen id's value and the topN best.
  TokenLogprob compute(const float* logits, int32_t chosen, size_t topN);

 private:
  size_t vocab_;
  std::vector<int32_t> order_;  // scratch for the top-N selection
};

}  // namespace k3::model
