// ChatSession: a multi-turn XTML conversation (spec §7.6) on one Session.
// Each turn rebuilds the whole prompt with the tokenizer library's chat
// encoder (thinking effort: the HF default, max when thinking is on; the
// declared tools, if any), feeds only the part the model state does not
// already hold (or starts over when the held tokens are not a prefix of it),
// generates until <|end_of_msg|>, and reads the reply with the chat output
// parser (k3/tok/chat_output_parser.h): reasoning, content and tool calls,
// checked against the declared tools; anything off-grammar (a call of an
// undeclared tool included) is reported, never dropped.
// When the context cannot hold the prompt plus room for a reply, the oldest
// turns (a user message and what answered it) are dropped, never the system
// message or the new message; a message that does not fit alone is refused.
// Thread-safety: not thread-safe; one per conversation, on a Session it alone
// drives.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k3/model/generate.h"
#include "k3/model/session.h"
#include "k3/tok/chat_encoder.h"
#include "k3/tok/chat_output_parser.h"
#include "k3/tok/tokenizer.h"

namespace k3::model {

struct ChatOptions {
  bool thinking = true;
  std::string system;
  // Declared tools (an OpenAI request's tools / tool_choice; its messages are
  // not used): rendered into every prompt, and the calls checked against them.
  std::string toolsJson;
  std::vector<tok::ToolSpec> tools;
  tok::ToolChoice toolChoice = tok::ToolChoice::Auto;
  std::string toolChoiceName;
};

struct ChatReply {
  tok::ChatMessage message;                   // role assistant: reasoning, content, tool calls
  std::string finishReason;                   // stop | tool_calls | length | "" (malformed)
  std::optional<tok::ChatOutputError> error;  // the first grammar violation
  std::string cutState;                       // length: where the message stopped
  std::vector<int32_t> tokens;
  bool stopped = false;         // ended at <|end_of_msg|> (or an eos id)
  bool cutByContext = false;    // ended because the context was full (not -n)
  size_t droppedTurns = 0;      // oldest turns dropped to fit this one
  bool refused = false;         // the new message did not fit alone: nothing generated
  size_t promptTokens = 0;      // the rendered prompt (or, refused, its size)
};

class ChatSession {
 public:
  ChatSession(Session& session, const tok::Tokenizer& tok, ChatOptions options);

  // One turn. onEvent streams what the parser reads from the reply
  // (Reasoning / Content deltas, ToolCall, Done, Malformed).
  ChatReply turn(const std::string& user, Sampler& sampler, const GenerateOptions& gen,
                 FunctionRef<void(const tok::ChatOutputEvent&)> onEvent);

  const std::vector<tok::ChatMessage>& messages() const { return messages_; }
  // The request each turn renders: the messages so far and the options.
  tok::ChatRequest request() const;
  // The ids the model state held when the last reply started (the prompt).
  const std::vector<int32_t>& lastPrompt() const { return lastPrompt_; }
  int32_t endOfMessageId() const { return static_cast<int32_t>(sp_.endOfMsg); }
  // Room a turn keeps for its reply: -n, at most a quarter of the context.
  size_t replyRoom(const GenerateOptions& gen) const;

 private:
  // Drops the oldest turn after the system message; false when none is left
  // before the newest user message.
  bool dropOldestTurn();

  Session& session_;
  const tok::Tokenizer& tok_;
  ChatOptions opts_;
  std::vector<tok::ChatMessage> messages_;
  std::vector<int32_t> lastPrompt_;
  tok::XtmlSpecials sp_;
};

}  // namespace k3::model
