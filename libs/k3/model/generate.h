// Autoregressive generation on a Session: sample from the last logits (after
// opts.processing's bias and penalties, when on), hand
// the token to the caller, feed it back, until a stop id or the token limit
// (clamped to the room left in the session's context).
// Thread-safety: drives one Session and one Sampler, which must not be used
// elsewhere during the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "k3/io/thread_pool.h"
#include "k3/model/logit_processors.h"
#include "k3/model/sampler.h"
#include "k3/model/session.h"
#include "k3/model/token_logprobs.h"

namespace k3::model {

struct GenerateOptions {
  size_t maxTokens = 256;
  SamplerOptions sampling;
  LogitProcessorOptions processing;  // bias and penalties (the session's history is the prompt)
  std::vector<int32_t> stopIds;  // eos ids and <|end_of_msg|>
  bool feedStopToken = false;    // keep the stop token in the state (chat turns)
  int logprobs = -1;             // ≥ 0: each token's log-probability and this many alternatives
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // sampled, including the stop token if hit
  bool stopped = false;         // ended on a stop id (not on the limit)
  bool cutByContext = false;    // ended because the context was full, before -n
  std::vector<TokenLogprob> logprobs;  // per token, when opts.logprobs ≥ 0 (log-softmax after bias/penalties)
  // Wall time from the first token handed to the caller to the last: what a
  // reader of the stream sees (sampling and the caller's output included),
  // the like-for-like figure for a client timing a served stream.
  double firstToLastSeconds = 0;
  // (tokens − 1) / firstToLastSeconds; 0 with fewer than two tokens.
  double wallTokensPerSecond() const {
    return firstToLastSeconds > 0 ? static_cast<double>(tokens.size() - 1) / firstToLastSeconds : 0.0;
  }
};

// The tokens generate() can produce from the session's position: the room
// left in the context (the last token is not fed back unless feedStopToken).
size_t generationRoom(const Session& session, bool feedStopToken);

// Session must have been fed at least one token. onToken(id) is called for
// every sampled token (stop token included) before it is fed back.
GenerateResult generate(Session& session, Sampler& sampler, const GenerateOptions& opts,
                        FunctionRef<void(int32_t)> onToken);

}  // namespace k3::model
