#include "k3/model/session.h"

#include <algorithm>
#include <chrono>

#include "k3/io/error.h"

namespace k3::model {

namespace {
RunnerOptions runnerOptions(const SessionOptions& o) {
  return {o.threads, o.chunk, o.maxContext, o.expertBudget, o.expertTopP};
}
}  // namespace

Session::Session(const ModelWeights& w, const SessionOptions& opts)
    : w_(w), opts_(opts), runner_(w, runnerOptions(opts)), state_(w.config(), opts.maxContext) {}

namespace {
PhaseTimes moeCounts(const SessionStats& s) {  // prefill and decode together
  PhaseTimes both;
  both.expertPairs = s.prefillPhases.expertPairs + s.decodePhases.expertPairs;
  both.moeRows = s.prefillPhases.moeRows + s.decodePhases.moeRows;
  return both;
}
}  // namespace

double Session::expertsKeptPerTokenLayer() const { return model::expertsKeptPerTokenLayer(moeCounts(stats_)); }

double Session::expertBytesPerToken() const { return model::expertBytesPerToken(w_, moeCounts(stats_)); }

void Session::reset() { state_.reset(); }

bool Session::feed(std::span<const int32_t> ids, float* allLogits, const std::atomic<bool>* cancel) {
  if (ids.empty()) return true;
  if (state_.position() + ids.size() > opts_.maxContext)
    fail(ErrorKind::Usage, "context limit: ", state_.position() + ids.size(), " tokens exceed --ctx ",
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
  for (; b < ids.size(); b += chunk(), ++passes) {
    if (cancel && cancel->load(std::memory_order_relaxed)) break;
    const size_t n = std::min(chunk(), ids.size() - b);
    const bool lastChunk = b + n == ids.size();
    // The head runs for every position with allLogits, else only for the
    // last position of the whole input (into lastLogits directly).
    SequenceRows rows{&state_, ids.subspan(b, n), allLogits ? n : lastChunk ? 1 : 0};
    runner_.run({&rows, 1}, allLogits ? allLogits + b * V : state_.lastLogits.data(), phases);
  }
  b = std::min(b, ids.size());  // tokens consumed
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
