#include "k3/model/sequence_state.h"

#include <algorithm>

#include "k3/io/error.h"

namespace k3::model {

SequenceState::SequenceState(const ModelConfig& c, size_t capacity)
    : lastLogits(static_cast<size_t>(c.vocabSize)), capacity_(capacity) {
  kda.resize(static_cast<size_t>(c.numLayers));
  mla.resize(static_cast<size_t>(c.numLayers));
  for (int i = 0; i < c.numLayers; ++i) {
    if (c.isKdaLayer(i))
      kda[static_cast<size_t>(i)] = KdaState(c);
    else
      mla[static_cast<size_t>(i)] = MlaCache(c, capacity);
  }
  tokens.reserve(capacity);
}

void SequenceState::reset() {
  for (auto& k : kda) k.reset();
  for (auto& m : mla) m.reset();
  tokens.clear();
  logitsCurrent = false;
}

uint64_t SequenceState::bytesFor(const ModelConfig& c, size_t capacity) {
  uint64_t floats = static_cast<uint64_t>(c.vocabSize);
  for (int i = 0; i < c.numLayers; ++i)
    if (c.isKdaLayer(i))
      floats += static_cast<uint64_t>(c.kdaNumHeads) * c.kdaHeadDim * c.kdaHeadDim +
                3ull * static_cast<uint64_t>(c.kdaProjDim()) * c.kdaConvKernel;
    else
      floats += static_cast<uint64_t>(capacity) * (static_cast<uint64_t>(c.kvLoraRank) + c.qkRopeHeadDim);
  return floats * sizeof(float) + capacity * sizeof(int32_t);
}

size_t StateSnapshot::bytes() const {
  size_t b = tokens.size() * sizeof(int32_t) + lastLogits.size() * sizeof(float);
  for (const KdaState& k : kda) b += (k.S.size() + k.conv.size()) * sizeof(float);
  return b;
}

StateSnapshot snapshotOf(const SequenceState& s) {
  StateSnapshot snap;
  snap.kda = s.kda;
  snap.tokens = s.tokens;
  snap.lastLogits = s.lastLogits;
  return snap;
}

void restoreTo(SequenceState& s, const StateSnapshot& snap) {
  const size_t n = snap.tokens.size();
  if (n > s.tokens.size() || !std::equal(snap.tokens.begin(), snap.tokens.end(), s.tokens.begin()) ||
      snap.kda.size() != s.kda.size() || snap.lastLogits.size() != s.lastLogits.size())
    fail(ErrorKind::Usage, "restore: the snapshot's ", n, " tokens are not a prefix of the sequence's ",
         s.tokens.size());
  for (size_t i = 0; i < s.kda.size(); ++i) {
    std::copy(snap.kda[i].S.begin(), snap.kda[i].S.end(), s.kda[i].S.begin());
    std::copy(snap.kda[i].conv.begin(), snap.kda[i].conv.end(), s.kda[i].conv.begin());
  }
  for (MlaCache& m : s.mla) m.length = std::min(m.length, n);  // unused layers stay 0
  s.tokens.resize(n);
  s.lastLogits = snap.lastLogits;
  s.logitsCurrent = true;
}

}  // namespace k3::model
