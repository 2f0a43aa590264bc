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
  for (const MlaRowsCopy& m : mla) b += (m.L.size() + m.R.size()) * sizeof(float);
  return b;
}

StateSnapshot snapshotOf(const SequenceState& s) {
  StateSnapshot snap;
  snap.kda = s.kda;
  const size_t n = s.tokens.size();
  snap.mla.resize(s.mla.size());
  for (size_t l = 0; l < s.mla.size(); ++l) {
    const MlaCache& c = s.mla[l];
    if (c.cap == 0) continue;  // a KDA layer
    const size_t lw = c.L.size() / c.cap, rw = c.R.size() / c.cap;
    snap.mla[l].L.assign(c.L.begin(), c.L.begin() + static_cast<ptrdiff_t>(n * lw));
    snap.mla[l].R.assign(c.R.begin(), c.R.begin() + static_cast<ptrdiff_t>(n * rw));
  }
  snap.tokens = s.tokens;
  snap.lastLogits = s.lastLogits;
  return snap;
}

void restoreTo(SequenceState& s, const StateSnapshot& snap) {
  const size_t n = snap.tokens.size();
  bool fits = n <= s.capacity() && snap.kda.size() == s.kda.size() && snap.mla.size() == s.mla.size() &&
              snap.lastLogits.size() == s.lastLogits.size();
  for (size_t l = 0; fits && l < s.kda.size(); ++l)
    fits = snap.kda[l].S.size() == s.kda[l].S.size() && snap.kda[l].conv.size() == s.kda[l].conv.size();
  for (size_t l = 0; fits && l < s.mla.size(); ++l) {
    const MlaCache& c = s.mla[l];
    const size_t lw = c.cap ? c.L.size() / c.cap : 0, rw = c.cap ? c.R.size() / c.cap : 0;
    fits = snap.mla[l].L.size() == n * lw && snap.mla[l].R.size() == n * rw;
  }
  if (!fits)
    fail(ErrorKind::Usage, "restore: the snapshot (", n, " tokens) does not fit this sequence's model and context ",
         s.capacity());
  const bool rowsLive = n <= s.tokens.size() && std::equal(snap.tokens.begin(), snap.tokens.end(), s.tokens.begin());
  for (size_t i = 0; i < s.kda.size(); ++i) {
    std::copy(snap.kda[i].S.begin(), snap.kda[i].S.end(), s.kda[i].S.begin());
    std::copy(snap.kda[i].conv.begin(), snap.kda[i].conv.end(), s.kda[i].conv.begin());
  }
  for (size_t l = 0; l < s.mla.size(); ++l) {
    MlaCache& c = s.mla[l];
    if (c.cap == 0) continue;
    if (!rowsLive) {
      std::copy(snap.mla[l].L.begin(), snap.mla[l].L.end(), c.L.begin());
      std::copy(snap.mla[l].R.begin(), snap.mla[l].R.end(), c.R.begin());
    }
    c.length = n;
  }
  s.tokens.assign(snap.tokens.begin(), snap.tokens.end());
  s.lastLogits = snap.lastLogits;
  s.logitsCurrent = true;
}

}  // namespace k3::model
