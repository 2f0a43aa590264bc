#include "k3/tok/chat.h"

#include <string_view>

#include "k3/io/error.h"

namespace k3::tok {
namespace {

class XtmlWriter {
 public:
  explicit XtmlWriter(const Tokenizer& tok) : tok_(tok) {
    open_ = require("<|open|>");
    close_ = require("<|close|>");
    sep_ = require("<|sep|>");
    endOfMsg_ = require("<|end_of_msg|>");
  }

  void text(std::string_view segment) { tok_.encodeAppend(segment, false, ids_); }
  void open(std::string_view tag) {
    ids_.push_back(open_);
    text(tag);
    ids_.push_back(sep_);
  }
  // OPEN(tag, role) = <|open|> «tag» « role» «="» «role» «"» <|sep|>
  void open(std::string_view tag, std::string_view role) {
    ids_.push_back(open_);
    text(tag);
    text(" role");
    text("=\"");
    text(role);
    text("\"");
    ids_.push_back(sep_);
  }
  void close(std::string_view tag) {
    ids_.push_back(close_);
    text(tag);
    ids_.push_back(sep_);
  }
  void endOfMessage() { ids_.push_back(endOfMsg_); }
  std::vector<uint32_t> take() { return std::move(ids_); }

 private:
  uint32_t require(std::string_view content) const {
    std::optional<uint32_t> id = tok_.specialId(content);
    if (!id) fail(ErrorKind::Missing, "chat prompt: the tokenizer has no ", content, " token (tokenizer_config.json absent?)");
    return *id;
  }

  const Tokenizer& tok_;
  std::vector<uint32_t> ids_;
  uint32_t open_ = 0, close_ = 0, sep_ = 0, endOfMsg_ = 0;
};

}  // namespace

std::vector<uint32_t> buildChatPrompt(const Tokenizer& tok, std::span<const ChatMessage> messages,
                                      const ChatOptions& opts) {
  XtmlWriter w(tok);
  for (const ChatMessage& m : messages) {
    if (m.role == "system" || m.role == "developer") {
      if (m.content.empty()) continue;  // peer behaviour: no empty system turn
      w.open("message", "system");
      w.text(m.content);
      w.close("message");
      w.endOfMessage();
    } else if (m.role == "user") {
      w.open("message", "user");
      w.text(m.content);
      w.close("message");
      w.endOfMessage();
    } else if (m.role == "assistant") {
      w.open("message", "assistant");
      if (opts.thinking) {  // preserved thinking: every past turn has a think channel
        w.open("think");
        w.text(m.reasoning);
        w.close("think");
      }
      w.open("response");
      w.text(m.content);
      w.close("response");
      w.close("message");
      w.endOfMessage();
    } else {
      fail(ErrorKind::Usage, "chat prompt: unknown role '", m.role, "' (system, developer, user, assistant)");
    }
  }
  if (opts.addGenerationPrompt) {
    w.open("message", "assistant");
    w.open(opts.thinking ? "think" : "response");
  }
  return w.take();
}

}  // namespace k3::tok
