// libFuzzer: request body bytes -> the server's request readers (chat
// completions and completions). Anything may be refused with an ApiError
// (a 400); nothing may crash, leak or hang, and a refusal is one line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k3/model/token_logprobs.h"
#include "k3/serve/api_error.h"
#include "k3/serve/generation_request.h"

namespace {
// What a parsed request may hold: the ranges the readers promise (sampling,
// bias ids inside the vocabulary, logprobs counts).
bool sane(const k3::serve::GenerationParams& p, size_t vocab) {
  const auto& q = p.processing;
  for (const auto& [id, b] : q.logitBias)
    if (id < 0 || static_cast<size_t>(id) >= vocab || !(b >= -100.0f && b <= 100.0f)) return false;
  return q.presencePenalty >= -2.0f && q.presencePenalty <= 2.0f && q.frequencyPenalty >= -2.0f &&
         q.frequencyPenalty <= 2.0f && q.repetitionPenalty >= k3::model::kMinRepetitionPenalty && p.sampling.minP >= 0.0f && p.sampling.minP <= 1.0f &&
         p.sampling.topK >= 0 && p.topLogprobs <= k3::model::kMaxTopLogprobs && (p.logprobs || p.topLogprobs == 0);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const k3::serve::RequestLimits limits{4096, 64, 4, 1000};
  for (int kind = 0; kind < 2; ++kind) {
    try {
      if (kind == 0) {
        const auto r = k3::serve::parseChatCompletionRequest(body, limits);
        if (r.chat.messages.empty() || r.params.maxTokens == 0 || r.params.maxTokens > limits.maxTokens) __builtin_trap();
        if (!sane(r.params, limits.vocabSize)) __builtin_trap();
      } else {
        const auto r = k3::serve::parseCompletionRequest(body, limits);
        if (r.promptIsIds == r.promptIds.empty() || r.params.stop.size() > limits.maxStops) __builtin_trap();
        if (!sane(r.params, limits.vocabSize)) __builtin_trap();
      }
    } catch (const k3::serve::ApiError& e) {
      if (e.status() != 400 || std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
    }
  }
  return 0;
}
