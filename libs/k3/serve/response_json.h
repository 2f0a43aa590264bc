// OpenAI response bodies as JSON text (written with k3/io/json_text.h):
// chat.completion, chat.completion.chunk, text_completion, usage, the model
// list. Pure functions of their arguments.
// Thread-safety: pure; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k3/serve/generation_job.h"
#include "k3/tok/chat_message.h"

namespace k3::serve {

struct ResponseMeta {
  std::string id;     // chatcmpl-… / cmpl-…
  int64_t created = 0;
  std::string model;
};

// Accumulates a streamed delta into the assistant message of a non-stream answer.
void addDelta(tok::ChatMessage& m, const OutputDelta& d);
// The message's text content ("" when none).
std::string contentOf(const tok::ChatMessage& m);

std::string usageJson(const GenerationUsage& u);
// choices[].logprobs of a chat answer: {"content": [{token, logprob, bytes,
// top_logprobs: [{token, logprob, bytes}]}], "refusal": null}. A masked
// token's −inf is written as −9999 (OpenAI's and vLLM's convention).
std::string chatLogprobsJson(const std::vector<LogprobEntry>& entries);
// choices[].logprobs of a completion: {tokens, token_logprobs, top_logprobs
// (a token → logprob object: the N best and the sampled one, as OpenAI's
// "up to logprobs + 1"), text_offset}. textOffset: characters (code points)
// of the text before these tokens; advanced past them.
std::string completionLogprobsJson(const std::vector<LogprobEntry>& entries, size_t& textOffset);
// logprobsJson: the choice's "logprobs" value ("null" when not asked for).
std::string chatCompletionJson(const ResponseMeta& m, const tok::ChatMessage& msg, const std::string& finish,
                               const GenerationUsage& u, const std::string& logprobsJson = "null");
// One chunk: `deltaJson` is the delta object's text ({"role":"assistant"}, ...);
// finish "" = null. usage chunks have no choices.
std::string chatChunkJson(const ResponseMeta& m, const std::string& deltaJson, const std::string& finish,
                          const std::string& logprobsJson = "null");
std::string chatDeltaJson(const OutputDelta& d);
std::string chatUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u);

std::string completionJson(const ResponseMeta& m, const std::string& text, const std::string& finish,
                           const GenerationUsage& u, const std::string& logprobsJson = "null");
std::string completionChunkJson(const ResponseMeta& m, const std::string& text, const std::string& finish,
                                const std::string& logprobsJson = "null");
std::string completionUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u);

std::string modelListJson(const std::string& model, int64_t created);

// SSE framing: "data: <json>\n\n".
inline std::string sseEvent(const std::string& json) { return "data: " + json + "\n\n"; }
inline const char* sseDone() { return "data: [DONE]\n\n"; }

}  // namespace k3::serve
