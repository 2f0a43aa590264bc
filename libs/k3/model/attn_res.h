// Attention Residuals (spec §6.2): instead of a residual stream, each token
// keeps block snapshots B_0..B_{n-1} and the running in-block sum `prefix`;
// before attention, before the MLP and before the head the layer input is a
// softmax mix of those candidates, scored by a learned vector.
// Thread-safety: AttnResState is one row's within one forward pass (Forward); not
// thread-safe. mix() only reads it.
#pragma once

#include <cstddef>
#include <vector>

namespace k3::model {

// Per-token AttnRes bookkeeping for one forward pass (not carried between
// tokens). Storage for `maxBlocks` snapshots is allocated once.
class AttnResState {
 public:
  AttnResState() = default;
  AttnResState(size_t hidden, size_t maxBlocks) : D_(hidden), snapshots_(hidden * maxBlocks), cap_(maxBlocks) {}

  void clear() { count_ = 0; }
  size_t count() const { return count_; }
  const float* snapshot(size_t b) const { return snapshots_.data() + b * D_; }
  void push(const float* v);  // appends a copy of v (D values)

  // out = mix(prefix, B, scorer) (spec §6.2.1): scores in double, softmax in
  // f32, candidates mixed raw in order B_0 … B_{n-1}, prefix.
  void mix(const float* prefix, const float* scorer, float eps, float* out) const;

 private:
  size_t D_ = 0;
  std::vector<float> snapshots_;
  size_t cap_ = 0;
  size_t count_ = 0;
};

}  // namespace k3::model
