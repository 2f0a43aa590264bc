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
      forward_(w, std::max<size_t>(1, opts.chunk), poolSize(opts.threads), opts.maxContext),
      state_(w.config(), opts.maxContext),
      residency_(std::make_unique<ExpertResidency>(w, opts.expertBudget)),
      last_(static_cast<size_t>(w.config().vocabSize)) {
  history_.reserve(opts.maxContext);
}

void Session::reset() {
  state_.reset();
  history_.clear();
}

void Session::feed(std::span<const int32_t> ids, float* allLogits) {
  if (ids.empty()) return;
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
  for (size_t b = 0; b < ids.size(); b += forward_.maxChunk(), ++passes) {
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
  history_.insert(history_.end(), ids.begin(), ids.end());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (decodeStep) {
    stats_.decodeTokens += 1;
    stats_.decodeSeconds += secs;
  } else {
    stats_.prefillTokens += ids.size();
    stats_.prefillPasses += passes;
    stats_.prefillSeconds += secs;
  }
}

}  // namespace k3::model
