// The server's own part of the OpenAI request schema: sampling (temperature,
// top_p, top_k, min_p, seed), logit_bias and the penalties, logprobs, limits,
// stop strings, streaming options, a few llama-server/vLLM extension fields
// that change nothing here (cache_prompt, ...), and the refusal of what k3kit
// does not do (n > 1, audio, ...) — a 400, never silently ignored.
// The conversation itself (messages, tools, tool_choice, response_format,
// chat_template_kwargs, reasoning_effort, add_generation_prompt) goes to the
// tok chat-request reader (k3/tok/chat_request.h), with role `developer`
// read as `system` (as OpenAI-compatible servers do).
// Thread-safety: values and pure parsers; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k3/model/logit_processors.h"
#include "k3/model/sampler.h"
#include "k3/tok/chat_message.h"
#include "k3/tok/grammar.h"

namespace k3::serve {

struct RequestLimits {
  size_t maxTokens = 4096;  // clamp on max_tokens (and the default)
  size_t jsonDepth = 64;
  size_t maxStops = 4;
  size_t vocabSize = 0;  // logit_bias ids must be below it (0: not checked)
  model::SamplerOptions sampling{1.0f, 0, 1.0f, 0};  // defaults (the container's generation_config.json; else OpenAI's)
};

struct GenerationParams {
  std::string model;            // as the client named it (echoed back)
  size_t maxTokens = 0;         // clamped; the engine also stops at the context end
  model::SamplerOptions sampling{1.0f, 0, 1.0f, 0};  // OpenAI's defaults: T = 1, top_p = 1
  bool seeded = false;          // seed given (else the engine draws one)
  model::LogitProcessorOptions processing;  // logit_bias, presence/frequency/repetition penalties
  bool logprobs = false;        // chat: logprobs true; completions: logprobs N given
  size_t topLogprobs = 0;       // chat: top_logprobs; completions: logprobs N
  std::vector<std::string> stop;
  bool stream = false;
  bool includeUsage = false;    // stream_options.include_usage
};

struct ChatCompletionRequest {
  GenerationParams params;
  tok::ChatRequest chat;
  // What the answer must follow (response_format, tool_choice, strict
  // tools; tok/grammar_output.h); nullptr = unconstrained.
  std::shared_ptr<const tok::Grammar> grammar;
};

struct CompletionRequest {
  GenerationParams params;
  bool promptIsIds = false;
  std::string promptText;
  std::vector<int32_t> promptIds;
};

ChatCompletionRequest parseChatCompletionRequest(std::string_view body, const RequestLimits& limits);
CompletionRequest parseCompletionRequest(std::string_view body, const RequestLimits& limits);

}  // namespace k3::serve
