#include "k3/tok/chat_output_message.h"

#include "k3/io/json_text.h"

namespace k3::tok {

void ChatOutputAccumulator::add(const ChatOutputEvent& e) {
  switch (e.kind) {
    case ChatOutputEvent::Kind::Reasoning: reasoning_ += e.text; break;
    case ChatOutputEvent::Kind::Content: content_ += e.text; break;
    case ChatOutputEvent::Kind::ToolCall: calls_.push_back(e.call); break;
    case ChatOutputEvent::Kind::Done: done_ = true; break;
    case ChatOutputEvent::Kind::Malformed: error_ = e.error; break;
  }
}

void ChatOutputAccumulator::end(const ChatOutputEnd& end) {
  if (!end.complete && !end.malformed) cut_ = true;
}

ChatMessage ChatOutputAccumulator::message() const {
  ChatMessage m;
  m.role = "assistant";
  if (!content_.empty()) m.content.push_back(content_);
  m.reasoning = reasoning_;
  m.toolCalls = calls_;
  return m;
}

std::string ChatOutputAccumulator::finishReason() const {
  if (error_) return "";
  if (done_) return calls_.empty() ? "stop" : "tool_calls";
  return cut_ ? "length" : "";
}

ParsedChatOutput parseChatOutput(const Tokenizer& tok, std::span<const uint32_t> ids, std::span<const ToolSpec> tools,
                                 bool startInThink, const std::string& callIdPrefix) {
  ParsedChatOutput r;
  ChatOutputParser parser(tok, tools, startInThink, callIdPrefix);
  for (uint32_t id : ids) parser.feed(id, r.events);
  r.end = parser.finish(r.events);
  ChatOutputAccumulator acc;
  acc.add(r.events);
  acc.end(r.end);
  r.message = acc.message();
  r.finishReason = acc.finishReason();
  r.error = acc.error();
  return r;
}

std::string assistantMessageJson(const ChatMessage& m) {
  std::string content;
  for (const auto& part : m.content) content += part;
  std::string out = "{\"role\": \"assistant\", \"content\": ";
  if (content.empty() && !m.toolCalls.empty()) out += "null";
  else appendJsonStringUtf8(out, content);
  out += ", \"reasoning_content\": ";
  if (m.reasoning.empty()) out += "null";
  else appendJsonStringUtf8(out, m.reasoning);
  if (!m.toolCalls.empty()) {
    out += ", \"tool_calls\": [";
    for (size_t i = 0; i < m.toolCalls.size(); ++i) {
      const ToolCall& c = m.toolCalls[i];
      out += i ? ", {\"id\": " : "{\"id\": ";
      appendJsonStringUtf8(out, c.id);
      out += ", \"type\": \"function\", \"function\": {\"name\": ";
      appendJsonStringUtf8(out, c.name);
      out += ", \"arguments\": ";
      appendJsonStringUtf8(out, c.arguments);
      out += "}}";
    }
    out += "]";
  }
  out += "}";
  return out;
}

std::string assistantChoiceJson(const ChatMessage& m, std::string_view finishReason) {
  std::string out = "{\"index\": 0, \"message\": " + assistantMessageJson(m) + ", \"finish_reason\": ";
  if (finishReason.empty()) out += "null";
  else appendJsonStringUtf8(out, finishReason);
  return out + "}";
}

}  // namespace k3::tok

namespace k3::tok {

std::string describeAssistantMessage(const ChatMessage& m, std::string_view finishReason) {
  std::string out = "reasoning: ";
  appendJsonStringUtf8(out, m.reasoning);
  out += "\ncontent: ";
  std::string content;
  for (const auto& part : m.content) content += part;
  appendJsonStringUtf8(out, content);
  for (const ToolCall& c : m.toolCalls) out += "\ntool_call " + c.id + " " + c.name + " " + c.arguments;
  out += "\nfinish_reason: " + std::string(finishReason) + "\n";
  return out;
}

}  // namespace k3::tok
