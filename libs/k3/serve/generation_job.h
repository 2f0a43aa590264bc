// One request's work as the engine runs it, and the channel its output comes
// back on: the HTTP thread waits on it (streaming deltas as they come), the
// engine's worker fills it, either side may cancel.
// Thread-safety: shared by the HTTP thread and the worker: the input is fixed
// before submit(), `cancel` is atomic, the output is guarded by `m`.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "k3/serve/generation_request.h"
#include "k3/tok/chat_message.h"

namespace k3::serve {

struct OutputDelta {
  enum class Kind { Reasoning, Content, ToolCall };
  Kind kind = Kind::Content;
  std::string text;  // reasoning/content text, or a tool call's arguments fragment
  int toolIndex = 0;            // ToolCall
  std::string toolId, toolName; // ToolCall: set on the call's first delta
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
  std::string finishReason;  // stop | length | tool_calls | cancelled
  std::string malformed;     // chat: the output broke the XTML grammar here (generation ended)
  std::string error;         // engine failure (a bug or resource problem)
  GenerationUsage usage;
  tok::ChatMessage reply;  // chat: what the deltas delivered, assembled (the server's memory of its replies)
  double prefillSeconds = 0, decodeSeconds = 0, queueSeconds = 0;
};

}  // namespace k3::serve
