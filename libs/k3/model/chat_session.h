// ChatSession: a multi-turn XTML conversation (spec §7.6) on one Session.
// Each turn rebuilds the whole prompt with the tokenizer library's chat
// encoder (thinking effort: the HF default, max when thinking is on), feeds only the part the model state does not already hold (or
// starts over when the held tokens are not a prefix of it), generates until
// <|end_of_msg|>, and splits the reply into thinking and answer channels by
// following the <|open|>tag<|sep|> … <|close|>tag<|sep|> structure.
// Thread-safety: not thread-safe; one per conversation, on a Session it alone
// drives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k3/model/generate.h"
#include "k3/model/session.h"
#include "k3/tok/chat_encoder.h"
#include "k3/tok/tokenizer.h"
#include "k3/tok/xtml_specials.h"

namespace k3::model {

enum class ChatChannel { Structure, Thinking, Answer };

struct ChatReply {
  std::string thinking;
  std::string answer;
  std::vector<int32_t> tokens;
  bool stopped = false;  // ended at <|end_of_msg|> (or an eos id)
};

class ChatSession {
 public:
  ChatSession(Session& session, const tok::Tokenizer& tok, bool thinking, const std::string& system);

  // One turn. onText(channel, bytes) streams the visible reply text.
  ChatReply turn(const std::string& user, Sampler& sampler, const GenerateOptions& gen,
                 FunctionRef<void(ChatChannel, const std::string&)> onText);

  const std::vector<tok::ChatMessage>& messages() const { return messages_; }
  // The request each turn renders: the messages so far and the options.
  tok::ChatRequest request() const;
  // The ids the model state held when the last reply started (the prompt).
  const std::vector<int32_t>& lastPrompt() const { return lastPrompt_; }
  int32_t endOfMessageId() const { return static_cast<int32_t>(sp_.endOfMsg); }

 private:
  Session& session_;
  const tok::Tokenizer& tok_;
  bool thinking_;
  std::vector<tok::ChatMessage> messages_;
  std::vector<int32_t> lastPrompt_;
  tok::XtmlSpecials sp_;
};

}  // namespace k3::model
