#include "k3/tok/chat_encoder.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>

#include "k3/io/error.h"
#include "k3/tok/chat_output_marker.h"
#include "k3/tok/chat_request.h"
#include "k3/tok/python_json.h"
#include "k3/tok/xtml_specials.h"

namespace k3::tok {
namespace {

constexpr std::string_view kFence = "```";
constexpr std::string_view kToolDeclare = "# Tools\nHere are the available tools, described in JSONSchema.\n\n";
constexpr std::string_view kDynamicTools =
    "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\n"
    "You have access to all existing and extended tools.\nHere are the specs for the extended tools.\n\n";
constexpr std::string_view kEffortHead =
    "`thinking_effort` guides on how much to think in your thinking channel (not including the response "
    "channel), supported values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked with "
    "`thinking_effort=";
constexpr std::string_view kRawJsonRule =
    "Your response must be raw JSON data without markdown code blocks (```json) or any additional formatting.";

using Attrs = std::vector<std::pair<std::string_view, std::string_view>>;

// Python str.strip() for the internal bodies (their ends are ASCII here).
std::string_view strip(std::string_view s) {
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string fencedJson(std::string_view json) {
  return std::string(kFence) + "json\n" + std::string(json) + "\n" + std::string(kFence);
}

const char* argumentType(const JsonValue& v) {
  switch (v.kind) {
    case JsonValue::Kind::Bool: return "boolean";  // before number: a bool is never a number here
    case JsonValue::Kind::Null: return "null";
    case JsonValue::Kind::Int:
    case JsonValue::Kind::Float: return "number";
    case JsonValue::Kind::String: return "string";
    case JsonValue::Kind::Object: return "object";
    case JsonValue::Kind::Array: return "array";
  }
  return "null";
}

class XtmlWriter {
 public:
  explicit XtmlWriter(const Tokenizer& tok, size_t limit = SIZE_MAX)
      : tok_(tok), sp_(xtmlSpecials(tok, "chat prompt")), limit_(limit) {}

  void text(std::string_view s) {
    if (s.empty() || out_.overLimit) return;
    out_.overLimit = !tok_.encodeAppendUpTo(s, false, out_.ids, limit_);
    if (!out_.overLimit) out_.segments.push_back({false, 0, std::string(s)});
  }
  // Ids given verbatim (a remembered generation): one text segment.
  void ids(const std::vector<uint32_t>& ids) {
    if (out_.overLimit) return;
    if (out_.ids.size() + ids.size() > limit_) {
      out_.ids.insert(out_.ids.end(), ids.begin(), ids.begin() + static_cast<ptrdiff_t>(limit_ + 1 - out_.ids.size()));
      out_.overLimit = true;
      return;
    }
    std::string text;
    for (uint32_t id : ids) text += tok_.tokenBytes(id);
    out_.segments.push_back({false, 0, std::move(text)});
    out_.ids.insert(out_.ids.end(), ids.begin(), ids.end());
  }
  void special(uint32_t id) {
    if (out_.overLimit) return;
    out_.segments.push_back({true, id, tok_.tokenBytes(id)});
    out_.ids.push_back(id);
    out_.overLimit = out_.ids.size() > limit_;
  }
  // OPEN(tag, k=v…) = <|open|> «tag» then « k» «="» «escape(v)» «"» each, <|sep|>.
  void open(std::string_view tag, const Attrs& attrs = {}) {
    special(sp_.open);
    text(tag);
    for (const auto& [k, v] : attrs) {
      std::string spaced(1, ' ');
      spaced.append(k);
      text(spaced);
      text("=\"");
      text(escapeAttribute(v));
      text("\"");
    }
    special(sp_.sep);
  }
  void close(std::string_view tag) {
    special(sp_.close);
    text(tag);
    special(sp_.sep);
  }
  void endMessage() {
    close("message");
    special(sp_.endOfMsg);
  }
  // A whole message with one body segment.
  void message(const Attrs& attrs, std::string_view body) {
    open("message", attrs);
    text(body);
    endMessage();
  }
  RenderedChat take() { return std::move(out_); }

 private:
  const Tokenizer& tok_;
  XtmlSpecials sp_;
  size_t limit_;
  RenderedChat out_;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  fail(ErrorKind::Usage, "chat request: ", path, ": ", what);
}

void writeCall(XtmlWriter& w, const ToolCall& call, size_t index, const std::string& path) {
  const std::string i = std::to_string(index);
  w.open("call", {{"tool", call.name}, {"index", i}});
  CallArguments args;
  std::string what;
  if (!readCallArguments(call.arguments, args, what)) bad(path + ".function.arguments", what);
  if (args.kind == CallArguments::Kind::Raw) {
    w.open("json", {{"type", "object"}});
    w.text(call.arguments);
    w.close("json");
  } else if (args.kind == CallArguments::Kind::Object) {
    for (const auto& [key, value] : args.object.members) {
      w.open("argument", {{"key", key}, {"type", argumentType(value)}});
      w.text(value.isString() ? value.text : pyDumps(value, {}));
      w.close("argument");
    }
  }
  w.close("call");
}

// The assistant's channels; `firstOpened` = the first channel's OPEN is the
// generation prompt's (renderAssistantBody) and is not written again.
void writeAssistantChannels(XtmlWriter& w, const ChatMessage& m, bool thinking, const std::string& path,
                            bool firstOpened) {
  if (thinking) {
    if (!firstOpened) w.open("think");
    w.text(m.reasoning);
    w.close("think");
  }
  if (thinking || !firstOpened) w.open("response");
  for (const std::string& part : m.content) w.text(part);
  w.close("response");
  if (!m.toolCalls.empty()) {
    w.open("tools");
    for (size_t j = 0; j < m.toolCalls.size(); ++j)
      writeCall(w, m.toolCalls[j], j + 1, path + ".tool_calls[" + std::to_string(j) + "]");
    w.close("tools");
  }
  w.endMessage();
}

Attrs roleAttrs(std::string_view role, const ChatMessage& m) {
  Attrs a = {{"role", role}};
  if (!m.name.empty()) a.emplace_back("name", m.name);
  return a;
}

void writeToolDeclaration(XtmlWriter& w, const ChatMessage* m, std::string_view head, const std::string& toolsJson) {
  Attrs a = m ? roleAttrs("system", *m) : Attrs{{"role", "system"}};
  a.emplace_back("type", "tool-declare");
  w.message(a, std::string(head) + fencedJson(toolsJson));
}

// A run of consecutive tool results [begin, end): in the preceding
// assistant's call order (by tool_call_id), each named by its matched call;
// results that match no call keep their order after the matched ones.
void writeToolRun(XtmlWriter& w, const std::vector<ChatMessage>& msgs, size_t begin, size_t end,
                  const ChatMessage* assistant, size_t& sinceAssistant) {
  struct Result {
    size_t msg;
    size_t order;
    std::string_view name;
  };
  std::vector<Result> run;
  for (size_t k = begin; k < end; ++k) {
    const ChatMessage& t = msgs[k];
    Result r{k, std::numeric_limits<size_t>::max(), t.name};
    if (assistant && !t.toolCallId.empty())
      for (size_t c = 0; c < assistant->toolCalls.size(); ++c)
        if (assistant->toolCalls[c].id == t.toolCallId) {
          r.order = c;
          r.name = assistant->toolCalls[c].name;
          break;
        }
    if (r.name.empty())
      bad("messages[" + std::to_string(k) + "]",
          t.toolCallId.empty() ? "tool result with no tool_call_id and no name"
                               : "tool result: tool_call_id '" + t.toolCallId +
                                     "' matches no call of the preceding assistant, and it has no name");
    run.push_back(r);
  }
  std::stable_sort(run.begin(), run.end(), [](const Result& a, const Result& b) { return a.order < b.order; });
  for (const Result& r : run) {
    const std::string i = std::to_string(++sinceAssistant);
    w.open("message", {{"role", "tool"}, {"tool", r.name}, {"index", i}});
    for (const std::string& part : msgs[r.msg].content) w.text(part);
    w.endMessage();
  }
}

const char* effortName(ThinkingEffort e) {
  switch (e) {
    case ThinkingEffort::Low: return "low";
    case ThinkingEffort::High: return "high";
    case ThinkingEffort::Max: return "max";
    case ThinkingEffort::None: break;
  }
  return "";
}

}  // namespace

RenderedChat renderChat(const Tokenizer& tok, const ChatRequest& req) { return renderChat(tok, req, SIZE_MAX); }

RenderedChat renderChat(const Tokenizer& tok, const ChatRequest& req, size_t tokenLimit) {
  XtmlWriter w(tok, tokenLimit);
  // 1-2: global turns.
  if (!req.toolsJson.empty()) writeToolDeclaration(w, nullptr, kToolDeclare, req.toolsJson);
  if (req.thinking && req.effort != ThinkingEffort::None) {
    const std::string body = std::string(kEffortHead) + effortName(req.effort) + "`.";
    w.message({{"role", "system"}, {"type", "thinking-effort"}}, strip(body));
  }
  // 3: the conversation.
  const ChatMessage* lastAssistant = nullptr;
  size_t toolsSinceAssistant = 0;
  const auto& msgs = req.messages;
  for (size_t i = 0; i < msgs.size();) {
    const ChatMessage& m = msgs[i];
    const std::string path = "messages[" + std::to_string(i) + "]";
    if (m.role == "tool") {
      size_t end = i;
      while (end < msgs.size() && msgs[end].role == "tool") ++end;
      writeToolRun(w, msgs, i, end, lastAssistant, toolsSinceAssistant);
      i = end;
      continue;
    }
    if (!m.toolCalls.empty() && m.role != "assistant") bad(path + ".tool_calls", "only an assistant makes tool calls");
    if (m.role == "system" && !m.toolsJson.empty()) {
      writeToolDeclaration(w, &m, kDynamicTools, m.toolsJson);  // its content is not rendered (spec)
    } else if (m.role == "system" || m.role == "user") {
      w.open("message", roleAttrs(m.role, m));
      for (const std::string& part : m.content) w.text(part);
      w.endMessage();
    } else if (m.role == "assistant") {
      w.open("message", roleAttrs("assistant", m));
      if (m.bodyIds.empty()) {
        writeAssistantChannels(w, m, req.thinking, path, false);
      } else {
        w.open(req.thinking ? "think" : "response");
        w.ids(m.bodyIds);
      }
      lastAssistant = &m;
      toolsSinceAssistant = 0;
    } else {
      bad(path + ".role", "unknown role '" + m.role + "' (system, user, assistant, tool)");
    }
    ++i;
  }
  // 4-5: one-shot turns.
  if (req.toolChoice == ToolChoice::Required || req.toolChoice == ToolChoice::None) {
    const bool required = req.toolChoice == ToolChoice::Required;
    const std::string body = std::string("The system is invoked with `tool_choice=") +
                             (required ? "required`.\nYou MUST call tools in the next message."
                                       : "none`.\nYou MUST NOT call any tools in the next message.");
    w.message({{"role", "system"}, {"type", "tool-choice"}}, strip(body));
  }
  if (req.responseFormat.kind != ResponseFormat::Kind::Text) {
    const bool schema = req.responseFormat.kind == ResponseFormat::Kind::JsonSchema;
    std::string body = std::string("The system is invoked with `response_format=") +
                       (schema ? "json_schema" : "json_object") + "`.\n" + std::string(kRawJsonRule);
    if (schema) body += "\nThe JSON data must match the following schema:\n" + fencedJson(req.responseFormat.schemaJson);
    w.message({{"role", "system"}, {"type", "response-format"}}, strip(body));
  }
  // 6: generation prompt.
  if (req.addGenerationPrompt) {
    w.open("message", {{"role", "assistant"}});
    w.open(req.thinking ? "think" : "response");
  }
  return w.take();
}

RenderedChat renderAssistantBody(const Tokenizer& tok, const ChatMessage& assistant, bool thinking) {
  if (assistant.role != "assistant") bad("message.role", "renderAssistantBody needs an assistant message, got '" + assistant.role + "'");
  XtmlWriter w(tok);
  writeAssistantChannels(w, assistant, thinking, "message", true);
  return w.take();
}

std::string describeSegments(const std::vector<ChatSegment>& segments) {
  std::string out;
  for (const ChatSegment& s : segments) {
    if (s.special) {
      out += s.text;
      if (s.text == "<|end_of_msg|>") out += '\n';
    } else {
      out += "\u2039" + s.text + "\u203a";
    }
  }
  return out;
}

}  // namespace k3::tok
