#include "k3/model/chat_session.h"

#include <algorithm>

#include "k3/tok/chat_output_message.h"

namespace k3::model {

namespace {
tok::ChatMessage textMessage(const char* role, const std::string& text) {
  tok::ChatMessage m;
  m.role = role;
  m.content = {text};
  return m;
}
}  // namespace

ChatSession::ChatSession(Session& session, const tok::Tokenizer& tok, ChatOptions options)
    : session_(session), tok_(tok), opts_(std::move(options)), sp_(tok::xtmlSpecials(tok, "chat session")) {
  if (!opts_.system.empty()) messages_.push_back(textMessage("system", opts_.system));
}

tok::ChatRequest ChatSession::request() const {
  tok::ChatRequest req;
  req.messages = messages_;
  req.toolsJson = opts_.toolsJson;
  req.tools = opts_.tools;
  req.toolChoice = opts_.toolChoice;
  req.toolChoiceName = opts_.toolChoiceName;
  req.thinking = opts_.thinking;
  req.effort = opts_.thinking ? tok::ThinkingEffort::Max : tok::ThinkingEffort::None;
  return req;
}

size_t ChatSession::replyRoom(const GenerateOptions& gen) const {
  return std::max<size_t>(1, std::min(gen.maxTokens, session_.capacity() / 4));
}

bool ChatSession::dropOldestTurn() {
  const size_t first = !messages_.empty() && messages_[0].role == "system" ? 1 : 0;
  // The oldest turn: its user message up to the next user message.
  size_t end = first + 1;
  while (end < messages_.size() && messages_[end].role != "user") ++end;
  if (end >= messages_.size()) return false;  // only the newest message is left
  messages_.erase(messages_.begin() + static_cast<std::ptrdiff_t>(first),
                  messages_.begin() + static_cast<std::ptrdiff_t>(end));
  return true;
}

ChatReply ChatSession::turn(const std::string& user, Sampler& sampler, const GenerateOptions& gen,
                            FunctionRef<void(const tok::ChatOutputEvent&)> onEvent) {
  ChatReply reply;
  messages_.push_back(textMessage("user", user));
  std::vector<uint32_t> built = tok::renderChat(tok_, request()).ids;
  const size_t want = replyRoom(gen);
  while (built.size() + want > session_.capacity() && dropOldestTurn()) {
    ++reply.droppedTurns;
    built = tok::renderChat(tok_, request()).ids;
  }
  reply.promptTokens = built.size();
  if (built.size() >= session_.capacity()) {  // not even one reply token would fit
    messages_.pop_back();
    reply.refused = true;
    return reply;
  }
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

  tok::ChatOutputParser parser(tok_, opts_.tools, opts_.thinking);
  tok::ChatOutputAccumulator acc;
  std::vector<tok::ChatOutputEvent> events;
  auto deliver = [&] {
    for (const auto& e : events) {
      acc.add(e);
      onEvent(e);
    }
    events.clear();
  };
  GenerateResult g = generate(session_, sampler, opts, [&](int32_t id) {
    parser.feed(static_cast<uint32_t>(id), events);
    deliver();
  });
  const tok::ChatOutputEnd end = parser.finish(events);
  deliver();
  acc.end(end);
  reply.tokens = std::move(g.tokens);
  reply.stopped = g.stopped;
  reply.cutByContext = g.cutByContext;
  reply.message = acc.message();
  reply.finishReason = acc.finishReason();
  reply.error = acc.error();
  if (!end.complete && !end.malformed) reply.cutState = end.state;
  messages_.push_back(reply.message);
  return reply;
}

}  // namespace k3::model
