// Sampler: picks the next token from logits (spec §6.8 plus top-k, min-p).
//   temperature ≤ 0 → greedy argmax (first index of the max);
//   otherwise keep the top-k logits (k = 0: all), p ∝ exp((l − max)/T) sorted
//   descending, keep the shortest prefix holding ≥ top_p of the mass, then
//   only the tokens with p ≥ min_p · p_max (vLLM's order and definition: on
//   the tempered probabilities, after top-k/top-p), and draw with the
//   sampler's own RNG (xoshiro256**, seeded by splitmix64), so a seed gives
//   the same tokens on every run and machine.
// The logits given are the ones to sample from: bias and penalties
// (model/logit_processors.h) are applied before, by the caller.
// Thread-safety: a Sampler owns its RNG, so one per generation (not
// thread-safe); argmax is pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace k3::model {

struct SamplerOptions {
  float temperature = 0.0f;
  int topK = 0;
  float topP = 1.0f;
  uint64_t seed = 0;
  float minP = 0.0f;  // 0 = off
};

// Bounds for the command line's --temp / --top-p / --top-k (the API has its
// own, in serve/generation_request): NaN and infinities are refused too.
inline constexpr float kMaxTemperature = 100.0f;
inline constexpr int kMaxTopK = 1 << 24;
// Throws Usage naming the flag and the value when an option is outside them.
void checkSamplerOptions(const SamplerOptions& opts);

class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  double uniform();  // [0, 1), 53 random bits
 private:
  uint64_t s_[4];
};

class Sampler {
 public:
  Sampler(const SamplerOptions& opts, size_t vocabSize);
  int32_t sample(const float* logits);
  static int32_t argmax(const float* logits, size_t n);
  // The candidates a draw chooses among (temperature > 0): ids in descending
  // logit order (ties: lower id first) and their probabilities, normalised.
  // What sample() draws from, for tests against a reference.
  std::vector<std::pair<int32_t, double>> candidates(const float* logits);

 private:
  SamplerOptions opts_;
  Rng rng_;
  std::vector<uint32_t> order_;  // candidate ids, allocated once
  std::vector<float> prob_;
  // Sorts and truncates into order_/prob_[0, kept); returns kept and sets
  // the unnormalised mass of the kept prefix.
  size_t keep(const float* logits, double& total);
};

}  // namespace k3::model
