#include "k3/model/sampler.h"

#include <algorithm>
#include <cmath>

#include "k3/io/error.h"

namespace k3::model {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void checkSamplerOptions(const SamplerOptions& o) {
  // !(x >= lo && x <= hi) is also true for NaN.
  if (!(o.temperature >= 0.0f && o.temperature <= kMaxTemperature))
    fail(ErrorKind::Usage, "--temp ", o.temperature, ": must be a number in [0, ", kMaxTemperature, "] (0 = greedy)");
  if (!(o.topP >= 0.0f && o.topP <= 1.0f))
    fail(ErrorKind::Usage, "--top-p ", o.topP, ": must be a number in [0, 1] (1 = all)");
  if (o.topK < 0 || o.topK > kMaxTopK)
    fail(ErrorKind::Usage, "--top-k ", o.topK, ": must be in [0, ", kMaxTopK, "] (0 = all)");
  if (!(o.minP >= 0.0f && o.minP <= 1.0f))
    fail(ErrorKind::Usage, "--min-p ", o.minP, ": must be a number in [0, 1] (0 = off)");
}

Rng::Rng(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t Rng::next() {  // xoshiro256**
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

Sampler::Sampler(const SamplerOptions& opts, size_t vocabSize)
    : opts_(opts), rng_(opts.seed), order_(vocabSize), prob_(vocabSize) {}

int32_t Sampler::argmax(const float* logits, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

size_t Sampler::keep(const float* logits, double& total) {
  const size_t V = order_.size();
  for (size_t i = 0; i < V; ++i) order_[i] = static_cast<uint32_t>(i);
  // Descending logits, ties by lower id (a total order: reproducible).
  auto byLogit = [&](uint32_t a, uint32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t kept = V;
  if (opts_.topK > 0 && static_cast<size_t>(opts_.topK) < V) {
    kept = static_cast<size_t>(opts_.topK);
    std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(kept), order_.end(), byLogit);
  } else {
    std::sort(order_.begin(), order_.end(), byLogit);
  }
  const float maxL = logits[order_[0]];
  total = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    prob_[i] = std::exp((logits[order_[i]] - maxL) / opts_.temperature);
    total += prob_[i];
  }
  if (opts_.topP < 1.0f) {
    const double want = static_cast<double>(opts_.topP) * total;
    double run = 0.0;
    size_t cut = kept;
    for (size_t i = 0; i < kept; ++i) {
      run += prob_[i];
      if (run >= want) {
        cut = i + 1;
        break;
      }
    }
    kept = cut;
    total = run;
  }
  if (opts_.minP > 0.0f) {
    // prob_ is exp((l − max)/T): the ratio to the top token's probability.
    // The top token always stays.
    size_t cut = 1;
    double run = prob_[0];
    while (cut < kept && prob_[cut] >= opts_.minP) run += prob_[cut++];
    kept = cut;
    total = run;
  }
  return kept;
}

int32_t Sampler::sample(const float* logits) {
  if (opts_.temperature <= 0.0f) return argmax(logits, order_.size());
  double total = 0.0;
  const size_t kept = keep(logits, total);
  const double r = rng_.uniform() * total;
  double run = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    run += prob_[i];
    if (run >= r) return static_cast<int32_t>(order_[i]);
  }
  return static_cast<int32_t>(order_[kept - 1]);
}

std::vector<std::pair<int32_t, double>> Sampler::candidates(const float* logits) {
  std::vector<std::pair<int32_t, double>> out;
  if (opts_.temperature <= 0.0f) {
    out.emplace_back(argmax(logits, order_.size()), 1.0);
    return out;
  }
  double total = 0.0;
  const size_t kept = keep(logits, total);
  for (size_t i = 0; i < kept; ++i) out.emplace_back(static_cast<int32_t>(order_[i]), prob_[i] / total);
  return out;
}

}  // namespace k3::model
