#include "k3/tok/chat_output_parser.h"

#include <utility>

#include "k3/tok/id_text.h"

namespace k3::tok {
namespace {

bool isDigits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

ChatOutputEvent event(ChatOutputEvent::Kind kind, std::string text = {}) {
  ChatOutputEvent e;
  e.kind = kind;
  e.text = std::move(text);
  return e;
}

}  // namespace

ChatOutputParser::ChatOutputParser(const Tokenizer& tok, std::span<const ToolSpec> tools, bool startInThink,
                                   std::string callIdPrefix)
    : tok_(tok),
      tools_(tools.begin(), tools.end()),
      callIdPrefix_(std::move(callIdPrefix)),
      sp_(xtmlSpecials(tok, "chat output parser")),
      where_(startInThink ? Where::Think : Where::Response) {}

void ChatOutputParser::feed(uint32_t id, std::vector<ChatOutputEvent>& events) {
  const size_t pos = pos_++;
  if (where_ == Where::Failed) return;
  if (where_ == Where::Done) return malformed(pos, "nothing after <|end_of_msg|>", "token id " + std::to_string(id), events);
  if (id == sp_.open || id == sp_.close) {
    const char* name = id == sp_.open ? "<|open|>" : "<|close|>";
    if (inMarker_)
      return malformed(pos, "the rest of the marker opened at token " + std::to_string(markerPos_) + ", then <|sep|>",
                       name, events);
    if (where_ == Where::Argument || where_ == Where::Json) {
      // Inside a value only its CLOSE may come; say so before reading the tag.
      if (id == sp_.open) return malformed(pos, expectedHere(), name, events);
    }
    flushText(events);
    inMarker_ = true;
    markerIsOpen_ = id == sp_.open;
    markerPos_ = pos;
    markerBytes_.clear();
    return;
  }
  if (id == sp_.sep) {
    if (!inMarker_) return malformed(pos, expectedHere(), "<|sep|> outside a marker", events);
    inMarker_ = false;
    return marker(events);
  }
  if (id == sp_.endOfMsg) {
    if (inMarker_) return malformed(pos, "the rest of the marker opened at token " + std::to_string(markerPos_), "<|end_of_msg|>", events);
    if (where_ == Where::Call || where_ == Where::Argument || where_ == Where::Json)
      return malformed(pos, expectedHere(), "<|end_of_msg|> inside tool call " + callName(), events);
    flushText(events);
    where_ = Where::Done;
    events.push_back(event(ChatOutputEvent::Kind::Done));
    return;
  }
  if (id >= tok_.vocabSize()) return malformed(pos, "a token id below " + std::to_string(tok_.vocabSize()), "id " + std::to_string(id), events);
  if (tok_.isSpecial(id))  // not structure, not text: a model slip, never content
    return malformed(pos, inMarker_ ? "marker text" : expectedHere(), "the special token " + tok_.tokenBytes(id), events);
  const std::string_view bytes = tok_.vocab().bytes(id);  // a rank: not special, below numBase
  if (inMarker_) {
    markerBytes_ += bytes;
    return;
  }
  text(bytes, events);
}

void ChatOutputParser::text(std::string_view bytes, std::vector<ChatOutputEvent>& events) {
  switch (where_) {
    case Where::Think:
    case Where::Response: {
      std::string out = held_.push(bytes);
      if (!out.empty())
        events.push_back(event(where_ == Where::Think ? ChatOutputEvent::Kind::Reasoning : ChatOutputEvent::Kind::Content,
                               std::move(out)));
      return;
    }
    case Where::Argument: argValue_ += bytes; return;
    case Where::Json: *callRaw_ += bytes; return;
    default: return malformed(pos_ - 1, expectedHere(), "text " + quoteSnippet(bytes), events);
  }
}

void ChatOutputParser::flushText(std::vector<ChatOutputEvent>& events) {
  std::string out = held_.flush();
  if (!out.empty())
    events.push_back(event(where_ == Where::Think ? ChatOutputEvent::Kind::Reasoning : ChatOutputEvent::Kind::Content,
                           std::move(out)));
}

void ChatOutputParser::marker(std::vector<ChatOutputEvent>& events) {
  std::string expected, found;
  std::optional<MarkerHeader> h = parseMarkerHeader(markerBytes_, expected, found);
  if (!h) return malformed(markerPos_, expected, std::string(markerIsOpen_ ? "<|open|>" : "<|close|>") + " " + found, events);
  if (markerIsOpen_) open(*h, events);
  else close(*h, events);
}

void ChatOutputParser::open(const MarkerHeader& h, std::vector<ChatOutputEvent>& events) {
  const bool bare = h.attrs.empty();
  auto unexpected = [&] { malformed(markerPos_, expectedHere(), h.describe(true), events); };
  switch (where_) {
    case Where::Think:
      // The model may repeat the prompt's OPEN(think) as its first token.
      if (markerPos_ == 0 && h.tag == "think" && bare) return;
      return unexpected();
    case Where::AfterThink:
      if (h.tag != "response" || !bare) return unexpected();
      where_ = Where::Response;
      return;
    case Where::AfterResponse:
      if (h.tag != "tools" || !bare) return unexpected();
      where_ = Where::Tools;
      return;
    case Where::Tools: {
      if (h.tag != "call") return unexpected();
      const std::string* name = h.attr("tool");
      const std::string* index = h.attr("index");
      if (!name || !index || h.attrs.size() != 2)
        return malformed(markerPos_, "OPEN(call, tool=NAME, index=I)", h.describe(true), events);
      callTool_ = nullptr;
      for (const ToolSpec& t : tools_)
        if (t.name == *name) callTool_ = &t;
      if (!callTool_) {
        std::string declared;
        for (const ToolSpec& t : tools_) declared += (declared.empty() ? "" : ", ") + quoteSnippet(t.name);
        return malformed(markerPos_, declared.empty() ? "no tool call (no tools were declared)" : "a declared tool (" + declared + ")",
                         "tool=" + quoteSnippet(*name), events);
      }
      if (!isDigits(*index) || *index != std::to_string(nextIndex_))
        return malformed(markerPos_, "index=\"" + std::to_string(nextIndex_) + "\" (calls are numbered 1, 2, …)",
                         "index=" + quoteSnippet(*index), events);
      callPos_ = markerPos_;
      callArgs_.emplace(*callTool_);
      callRaw_.reset();
      where_ = Where::Call;
      return;
    }
    case Where::Call:
      if (callRaw_) return unexpected();  // a raw block is the call's only content
      if (h.tag == "argument") {
        const std::string* key = h.attr("key");
        const std::string* type = h.attr("type");
        if (!key || !type || h.attrs.size() != 2)
          return malformed(markerPos_, "OPEN(argument, key=K, type=T)", h.describe(true), events);
        argPos_ = markerPos_;
        argKey_ = *key;
        argType_ = *type;
        argValue_.clear();
        where_ = Where::Argument;
        return;
      }
      if (h.tag == "json") {
        const std::string* type = h.attr("type");
        if (!callArgs_->empty() || !type || *type != "object" || h.attrs.size() != 1)
          return malformed(markerPos_,
                           callArgs_->empty() ? "OPEN(json, type=\"object\")" : "OPEN(argument, …) or CLOSE(call) after an argument",
                           h.describe(true), events);
        callRaw_.emplace();
        where_ = Where::Json;
        return;
      }
      return unexpected();
    default: return unexpected();
  }
}

void ChatOutputParser::close(const MarkerHeader& h, std::vector<ChatOutputEvent>& events) {
  auto unexpected = [&] { malformed(markerPos_, expectedHere(), h.describe(false), events); };
  if (!h.attrs.empty()) return unexpected();
  switch (where_) {
    case Where::Think:
      if (h.tag != "think") return unexpected();
      where_ = Where::AfterThink;
      return;
    case Where::Response:
      if (h.tag != "response") return unexpected();
      where_ = Where::AfterResponse;
      return;
    case Where::AfterResponse:
    case Where::AfterTools:
      if (h.tag != "message") return unexpected();
      where_ = Where::AfterMessage;
      return;
    case Where::Tools:
      if (h.tag != "tools" || nextIndex_ == 1) return unexpected();  // the encoder never writes an empty tools block
      where_ = Where::AfterTools;
      return;
    case Where::Argument: {
      if (h.tag != "argument") return unexpected();
      std::string expected, found;
      if (!callArgs_->add(argKey_, argType_, argValue_, expected, found))
        return malformed(argPos_, expected, found, events);
      where_ = Where::Call;
      return;
    }
    case Where::Json:
      if (h.tag != "json") return unexpected();
      where_ = Where::Call;
      return;
    case Where::Call: {
      if (h.tag != "call") return unexpected();
      ChatOutputEvent e = event(ChatOutputEvent::Kind::ToolCall);
      e.index = nextIndex_;
      e.call.id = callIdPrefix_ + std::to_string(nextIndex_);
      e.call.name = callTool_->name;
      e.call.arguments = callRaw_ ? toValidUtf8(*callRaw_) : callArgs_->json();
      e.mistyped = callArgs_->mistyped();
      events.push_back(std::move(e));
      ++nextIndex_;
      callArgs_.reset();
      callRaw_.reset();
      where_ = Where::Tools;
      return;
    }
    default: return unexpected();
  }
}

void ChatOutputParser::malformed(size_t position, std::string expected, std::string found,
                                 std::vector<ChatOutputEvent>& events) {
  flushText(events);
  where_ = Where::Failed;
  inMarker_ = false;
  ChatOutputEvent e = event(ChatOutputEvent::Kind::Malformed);
  e.error = {position, std::move(expected), std::move(found)};
  events.push_back(std::move(e));
}

std::string ChatOutputParser::callName() const {
  return std::to_string(nextIndex_) + " (" + (callTool_ ? callTool_->name : std::string()) + ")";
}

std::string ChatOutputParser::expectedHere() const {
  switch (where_) {
    case Where::Think: return "reasoning text or CLOSE(think)";
    case Where::AfterThink: return "OPEN(response)";
    case Where::Response: return "content text or CLOSE(response)";
    case Where::AfterResponse: return "OPEN(tools) or CLOSE(message)";
    case Where::Tools: return nextIndex_ == 1 ? "OPEN(call, …)" : "OPEN(call, …) or CLOSE(tools)";
    case Where::Call:
      if (callRaw_) return "CLOSE(call) after the json block of call " + callName();
      return callArgs_ && !callArgs_->empty() ? "OPEN(argument, …) or CLOSE(call) in call " + callName()
                                              : "OPEN(argument, …), OPEN(json, …) or CLOSE(call) in call " + callName();
    case Where::Argument: return "the value of argument " + quoteSnippet(argKey_) + " or CLOSE(argument)";
    case Where::Json: return "the json block's text or CLOSE(json)";
    case Where::AfterTools: return "CLOSE(message)";
    case Where::AfterMessage: return "<|end_of_msg|>";
    case Where::Done: return "nothing after <|end_of_msg|>";
    case Where::Failed: return "nothing (already malformed)";
  }
  return "";
}

ChatOutputEnd ChatOutputParser::finish(std::vector<ChatOutputEvent>& events) {
  ChatOutputEnd end;
  end.complete = where_ == Where::Done;
  end.malformed = where_ == Where::Failed;
  if (end.complete || end.malformed) return end;
  flushText(events);
  switch (where_) {
    case Where::Think: end.state = "in the reasoning"; break;
    case Where::AfterThink: end.state = "after the reasoning"; break;
    case Where::Response: end.state = "in the response"; break;
    case Where::AfterResponse: end.state = "after the response"; break;
    case Where::Tools: end.state = "between tool calls"; break;
    case Where::Call:
    case Where::Argument:
    case Where::Json: end.state = "inside tool call " + callName(); break;
    case Where::AfterTools:
    case Where::AfterMessage: end.state = "before the end of the message"; break;
    default: break;
  }
  if (inMarker_) end.state += ", inside a marker";
  return end;
}

}  // namespace k3::tok
