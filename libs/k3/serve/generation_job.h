// One request's work as the engine runs it, and the channel its output comes
// back on: the HTTP thread waits on it (streaming deltas as they come), the
// engine's worker fills it, either side may cancel.
// Thread-safety: shared by the HTTP thread and the worker: the input is fixed
// before submit(), `cancel` is atomic, the output is guarded by `m`.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "k3/serve/generation_request.h"
#include "k3/tok/chat_message.h"
#include "k3/tok/grammar.h"

namespace k3::serve {

// One generated token's log-probabilities (logprobs requested), as the
// response writes them: the token's bytes, its value, the alternatives.
struct LogprobEntry {
  std::string token;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // top_logprobs, most likely first
};

struct OutputDelta {
  // Logprob: one generated token's entry, pushed before the text that token
  // produced (if any); the HTTP side attaches it to the next chunk it sends.
  enum class Kind { Reasoning, Content, ToolCall, Logprob };
  Kind kind = Kind::Content;
  std::string text;  // reasoning/content text, or a tool call's arguments fragment
  int toolIndex = 0;            // ToolCall
  std::string toolId, toolName; // ToolCall: set on the call's first delta
  LogprobEntry logprob;         // Logprob
};

struct GenerationUsage {
  size_t promptTokens = 0, cachedTokens = 0, completionTokens = 0;
};

struct GenerationJob {
  enum class Mode { Chat, Text };
  // Input, fixed before the job is queued.
  Mode mode = Mode::Text;
  std::vector<int32_t> prompt;
  GenerationParams params;
  bool thinking = false;  // chat: the prompt ends inside the think channel
  std::vector<tok::ToolSpec> tools;  // chat: declared tools, for the output parser
  std::shared_ptr<const tok::Grammar> grammar;  // chat: what the answer must follow (nullptr: free)
  // chat: tool-call ids are this + the call's index; unique per response, since
  // clients send the ids back in later turns and tool results name them.
  std::string callIdPrefix = "call_";
  std::chrono::steady_clock::time_point enqueued = std::chrono::steady_clock::now();

  std::atomic<bool> cancel{false};  // set by the HTTP side (client gone)

  // Output, guarded by m; cv signals every change.
  std::mutex m;
  std::condition_variable cv;
  std::vector<OutputDelta> pending;  // not yet taken by the HTTP side
  bool done = false;
  std::string finishReason;  // stop | length | tool_calls | malformed | cancelled
  std::string malformed;     // chat: the output broke the XTML grammar here (generation ended)
  std::string error;         // engine failure (a bug or resource problem), or the shutdown
  int errorStatus = 500;     // 503 when the server is shutting down
  GenerationUsage usage;
  tok::ChatMessage reply;  // chat: what the deltas delivered, assembled (the server's memory of its replies)
  double prefillSeconds = 0, decodeSeconds = 0, queueSeconds = 0;
  double maskSeconds = 0;       // computing grammar masks (part of decodeSeconds)
  size_t maskedTokens = 0;      // tokens picked under a grammar mask
  size_t mistypedArguments = 0; // tool-call arguments whose type differs from the declaration
};

}  // namespace k3::serve
