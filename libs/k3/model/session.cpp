#include "k3/model/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "k3/io/error.h"

namespace k3::model {

namespace {
size_t poolSize(size_t t) { return t ? t : std::max<size_t>(1, std::thread::hardware_concurrency()); }
}  // namespace

Session::Session(const ModelWeights& w, const SessionOptions& opts)
    : w_(w), opts_(opts), pool_(poolSize(opts.threads)),
      forward_(w, std::max<size_t>(1, opts.chunk), poolSize(opts.threads), opts.maxContext, opts.expertTopP),
      state_(w.config(), opts.maxContext),
      residency_(std::make_unique<ExpertResidency>(w, opts.expertBudget)),
      last_(static_cast<size_t>(w.config().vocabSize)) {
  history_.reserve(opts.maxContext);
}

double Session::expertsKeptPerTokenLayer() const {
  const double rows = stats_.prefillPhases.moeRows + stats_.decodePhases.moeRows;
  return rows > 0 ? (stats_.prefillPhases.expertPairs + stats_.decodePhases.expertPairs) / rows : 0.0;
}

double Session::expertBytesPerToken() const {
  const ModelConfig& c = w_.config();
  int moeLayers = 0;
  for (int l = 0; l < c.numLayers; ++l) moeLayers += c.isMoeLayer(l) ? 1 : 0;
  return expertsKeptPerTokenLayer() * moeLayers * static_cast<double>(w_.bytesPerExpert());
}

void Session::reset() {
  state_.reset();
  history_.clear();
}

size_t StateSnapshot::bytes() const {
  size_t b = tokens.size() * sizeof(int32_t) + lastLogits.size() * sizeof(float);
  for (const KdaState& k : kda) b += (k.S.size() + k.conv.size()) * sizeof(float);
  for (const MlaRows& m : mla) b += (m.L.size() + m.R.size()) * sizeof(float);
  return b;
}

StateSnapshot Session::snapshot() const {
  StateSnapshot s;
  s.kda = state_.kda;
  const size_t n = history_.size();
  s.mla.resize(state_.mla.size());
  for (size_t l = 0; l < state_.mla.size(); ++l) {
    const MlaCache& c = state_.mla[l];
    if (c.cap == 0) continue;  // a KDA layer
    const size_t lw = c.L.size() / c.cap, rw = c.R.size() / c.cap;
    s.mla[l].L.assign(c.L.begin(), c.L.begin() + static_cast<ptrdiff_t>(n * lw));
    s.mla[l].R.assign(c.R.begin(), c.R.begin() + static_cast<ptrdiff_t>(n * rw));
  }
  s.tokens = history_;
  s.lastLogits = last_;
  return s;
}

void Session::restore(const StateSnapshot& snap) {
  const size_t n = snap.tokens.size();
  bool fits = n <= opts_.maxContext && snap.kda.size() == state_.kda.size() &&
              snap.mla.size() == state_.mla.size() && snap.lastLogits.size() == last_.size();
  for (size_t l = 0; fits && l < state_.kda.size(); ++l)
    fits = snap.kda[l].S.size() == state_.kda[l].S.size() && snap.kda[l].conv.size() == state_.kda[l].conv.size();
  for (size_t l = 0; fits && l < state_.mla.size(); ++l) {
    const MlaCache& c = state_.mla[l];
    const size_t lw = c.cap ? c.L.size() / c.cap : 0, rw = c.cap ? c.R.size() / c.cap : 0;
    fits = snap.mla[l].L.size() == n * lw && snap.mla[l].R.size() == n * rw;
  }
  if (!fits)
    fail(ErrorKind::Usage, "restore: the snapshot (", n, " tokens) does not fit this session's model and context ",
         opts_.maxContext);
  const bool rowsLive = n <= history_.size() && std::equal(snap.tokens.begin(), snap.tokens.end(), history_.begin());
  for (size_t i = 0; i < state_.kda.size(); ++i) {
    std::copy(snap.kda[i].S.begin(), snap.kda[i].S.end(), state_.kda[i].S.begin());
    std::copy(snap.kda[i].conv.begin(), snap.kda[i].conv.end(), state_.kda[i].conv.begin());
  }
  for (size_t l = 0; l < state_.mla.size(); ++l) {
    MlaCache& c = state_.mla[l];
    if (c.cap == 0) continue;
    if (!rowsLive) {
      std::copy(snap.mla[l].L.begin(), snap.mla[l].L.end(), c.L.begin());
      std::copy(snap.mla[l].R.begin(), snap.mla[l].R.end(), c.R.begin());
    }
    c.length = n;
  }
  state_.position = n;
  history_.assign(snap.tokens.begin(), snap.tokens.end());
  last_ = snap.lastLogits;
}

bool Session::feed(std::span<const int32_t> ids, float* allLogits, const std::atomic<bool>* cancel) {
  if (ids.empty()) return true;
  if (state_.position + ids.size() > opts_.maxContext)
    fail(ErrorKind::Usage, "context limit: ", state_.position + ids.size(), " tokens exceed --ctx ",
         opts_.maxContext);
  const size_t V = vocabSize();
  for (int32_t id : ids)  // refuse before any state changes
    if (id < 0 || static_cast<size_t>(id) >= V)
      fail(ErrorKind::Usage, "token id ", id, " is outside the vocabulary [0, ", V, ")");
  const bool decodeStep = ids.size() == 1 && !allLogits;
  PhaseTimes* phases = decodeStep ? &stats_.decodePhases : &stats_.prefillPhases;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t passes = 0;
  size_t b = 0;
  for (; b < ids.size(); b += forward_.maxChunk(), ++passes) {
    if (cancel && cancel->load(std::memory_order_relaxed)) break;
    const size_t n = std::min(forward_.maxChunk(), ids.size() - b);
    const bool lastChunk = b + n == ids.size();
    if (allLogits) {
      forward_.run(state_, ids.data() + b, n, true, allLogits + b * V, pool_, *residency_, phases);
      if (lastChunk) std::memcpy(last_.data(), allLogits + (b + n - 1) * V, V * sizeof(float));
    } else {
      // The head runs only for the last position of the whole input.
      forward_.run(state_, ids.data() + b, n, false, lastChunk ? last_.data() : nullptr, pool_,
                   *residency_, phases);
    }
  }
  b = std::min(b, ids.size());  // tokens consumed
  history_.insert(history_.end(), ids.begin(), ids.begin() + static_cast<ptrdiff_t>(b));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (decodeStep) {
    stats_.decodeTokens += 1;
    stats_.decodeSeconds += secs;
  } else {
    stats_.prefillTokens += b;
    stats_.prefillPasses += passes;
    stats_.prefillSeconds += secs;
  }
  return b == ids.size();
}

}  // namespace k3::model
