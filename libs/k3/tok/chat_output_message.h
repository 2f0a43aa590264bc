// The assistant message assembled from the output parser's events, and its
// OpenAI chat-completions JSON. A server streams the events as SSE deltas and
// keeps one accumulator for the final message / usage record.
// Thread-safety: a ChatOutputAccumulator is one response's; not thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "k3/tok/chat_message.h"
#include "k3/tok/chat_output_parser.h"

namespace k3::tok {

class ChatOutputAccumulator {
 public:
  void add(const ChatOutputEvent& e);
  void add(std::span<const ChatOutputEvent> events) {
    for (const auto& e : events) add(e);
  }
  // After ChatOutputParser::finish(): an incomplete message ends with
  // finish_reason "length".
  void end(const ChatOutputEnd& end);

  // role "assistant"; content is one part, or none when empty; reasoning;
  // toolCalls in index order.
  ChatMessage message() const;
  // "tool_calls" when the message made calls, else "stop"; "length" when it
  // was cut off; "" while neither Done nor end() arrived (or malformed).
  std::string finishReason() const;
  const std::optional<ChatOutputError>& error() const { return error_; }

 private:
  std::string reasoning_, content_;
  std::vector<ToolCall> calls_;
  bool done_ = false, cut_ = false;
  std::optional<ChatOutputError> error_;
};

// A whole generated id sequence parsed at once (feed each id, then finish):
// for the CLI, tests and batch use; a server feeds the parser itself.
struct ParsedChatOutput {
  std::vector<ChatOutputEvent> events;
  ChatOutputEnd end;
  ChatMessage message;
  std::string finishReason;  // "" when malformed
  std::optional<ChatOutputError> error;
};
ParsedChatOutput parseChatOutput(const Tokenizer& tok, std::span<const uint32_t> ids, std::span<const ToolSpec> tools,
                                 bool startInThink, const std::string& callIdPrefix = "call_");

// {"role": "assistant", "content": …, "reasoning_content": …[, "tool_calls":
// [{"id", "type": "function", "function": {"name", "arguments"}}]]}.
// content is null when empty and there are calls; reasoning_content is null
// when empty; non-ASCII is kept as UTF-8.
std::string assistantMessageJson(const ChatMessage& m);
// A choice as in a chat.completion: {"index": 0, "message": …, "finish_reason": …}.
std::string assistantChoiceJson(const ChatMessage& m, std::string_view finishReason);
// For people: one labelled line per part, text JSON-quoted —
//   reasoning: "…" / content: "…" / tool_call call_1 get_weather {"city": …} / finish_reason: stop
std::string describeAssistantMessage(const ChatMessage& m, std::string_view finishReason);

}  // namespace k3::tok
