#include "k3/model/chat_session.h"

#include <algorithm>

namespace k3::model {

namespace {
tok::ChatMessage textMessage(const char* role, const std::string& text) {
  tok::ChatMessage m;
  m.role = role;
  m.content = {text};
  return m;
}
}  // namespace

ChatSession::ChatSession(Session& session, const tok::Tokenizer& tok, bool thinking, const std::string& system)
    : session_(session), tok_(tok), thinking_(thinking), sp_(tok::xtmlSpecials(tok, "chat session")) {
  if (!system.empty()) messages_.push_back(textMessage("system", system));
}

tok::ChatRequest ChatSession::request() const {
  tok::ChatRequest req;
  req.messages = messages_;
  req.thinking = thinking_;
  req.effort = thinking_ ? tok::ThinkingEffort::Max : tok::ThinkingEffort::None;
  return req;
}

ChatReply ChatSession::turn(const std::string& user, Sampler& sampler, const GenerateOptions& gen,
                            FunctionRef<void(ChatChannel, const std::string&)> onText) {
  messages_.push_back(textMessage("user", user));
  const std::vector<uint32_t> built = tok::renderChat(tok_, request()).ids;
  lastPrompt_.assign(built.begin(), built.end());

  // Reuse the state when it holds a strict prefix of the new prompt.
  const auto& held = session_.history();
  const bool reusable = held.size() < lastPrompt_.size() &&
                        std::equal(held.begin(), held.end(), lastPrompt_.begin());
  if (!reusable) session_.reset();
  session_.feed(std::span<const int32_t>(lastPrompt_).subspan(session_.history().size()));

  GenerateOptions opts = gen;
  if (std::find(opts.stopIds.begin(), opts.stopIds.end(), endOfMessageId()) == opts.stopIds.end())
    opts.stopIds.push_back(endOfMessageId());
  opts.feedStopToken = true;

  // Display filter: structural runs are <|open|>/<|close|> … <|sep|>; the
  // tag they name switches the channel.
  ChatReply reply;
  ChatChannel channel = thinking_ ? ChatChannel::Thinking : ChatChannel::Answer;
  bool inTag = false, closing = false;
  std::string tag;
  auto onToken = [&](int32_t token) {
    const auto id = static_cast<uint32_t>(token);
    if (id == sp_.endOfMsg || id == sp_.open || id == sp_.close) {
      inTag = id != sp_.endOfMsg;
      closing = id == sp_.close;
      tag.clear();
      return;
    }
    if (inTag) {
      if (id == sp_.sep) {
        inTag = false;
        const bool think = tag.rfind("think", 0) == 0, response = tag.rfind("response", 0) == 0;
        if (closing)
          channel = ChatChannel::Structure;
        else if (think)
          channel = ChatChannel::Thinking;
        else if (response)
          channel = ChatChannel::Answer;
        else
          channel = ChatChannel::Structure;
      } else {
        tag += tok_.tokenBytes(id);
      }
      return;
    }
    if (id == sp_.sep || channel == ChatChannel::Structure) return;
    const std::string bytes = tok_.tokenBytes(id);
    (channel == ChatChannel::Thinking ? reply.thinking : reply.answer) += bytes;
    onText(channel, bytes);
  };
  GenerateResult g = generate(session_, sampler, opts, onToken);
  reply.tokens = std::move(g.tokens);
  reply.stopped = g.stopped;
  tok::ChatMessage said = textMessage("assistant", reply.answer);
  said.reasoning = reply.thinking;
  messages_.push_back(std::move(said));
  return reply;
}

}  // namespace k3::model
