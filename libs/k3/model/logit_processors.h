// What is done to one sequence's logits before the sampler sees them:
// logit_bias, then the three penalties, in vLLM's order and definitions.
//   bias:        l[id] += b                        (OpenAI's logit_bias, b in [-100, 100])
//   repetition:  over every id in the prompt or the output so far:
//                l > 0 → l / r, l ≤ 0 → l · r       (llama.cpp / vLLM, multiplicative; r > 1 discourages)
//   frequency:   l[id] −= f · count(id in the output so far)   (OpenAI)
//   presence:    l[id] −= p · [id in the output so far]         (OpenAI)
// "The output" is the generated tokens only; the repetition penalty also
// counts the prompt's (vLLM does both). All off = nothing is touched, so
// greedy and seeded results are those of the bare sampler.
// Thread-safety: one per sequence (it keeps the counts); not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace k3::model {

struct LogitProcessorOptions {
  float presencePenalty = 0.0f;    // [-2, 2]
  float frequencyPenalty = 0.0f;   // [-2, 2]
  float repetitionPenalty = 1.0f;  // [kMinRepetitionPenalty, kMaxRepetitionPenalty]; 1 = off
  std::vector<std::pair<int32_t, float>> logitBias{};  // id → added, one entry per id
  bool active() const {
    return presencePenalty != 0.0f || frequencyPenalty != 0.0f || repetitionPenalty != 1.0f || !logitBias.empty();
  }
};

inline constexpr float kMaxPenalty = 2.0f;  // |presence|, |frequency| (OpenAI's range)
inline constexpr float kMaxRepetitionPenalty = 100.0f;
// 1/max: a factor that small would blow finite logits up to infinity (and a
// tiny double sent to the API rounds to 0 as a float).
inline constexpr float kMinRepetitionPenalty = 1.0f / kMaxRepetitionPenalty;
inline constexpr float kMaxLogitBias = 100.0f;  // |bias| (OpenAI's range)

// Throws Usage naming the flag (--presence-penalty, ...) and the value when
// an option is outside its range or a bias id is not below vocabSize.
void checkLogitProcessorOptions(const LogitProcessorOptions& o, size_t vocabSize);

class LogitProcessor {
 public:
  LogitProcessor(const LogitProcessorOptions& o, size_t vocabSize);
  bool active() const { return opts_.active(); }
  // Ids the repetition penalty counts besides the output (the prompt).
  void addPrompt(std::span<const int32_t> ids);
  // A generated token: counted by all three penalties from the next step.
  void addGenerated(int32_t id);
  // Bias, then repetition, frequency, presence; in place on [vocabSize].
  void apply(float* logits) const;

 private:
  void touch(int32_t id);
  LogitProcessorOptions opts_;
  std::vector<uint32_t> outputCount_;  // [vocab] times generated
  std::vector<uint8_t> seen_;          // [vocab] in the prompt or the output
  std::vector<int32_t> touched_;       // the ids with seen_ set: apply() costs O(distinct ids), not O(vocab)
};

}  // namespace k3::model
