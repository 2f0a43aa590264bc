#include "k3/tok/chat_request.h"

#include <optional>

#include "k3/io/error.h"
#include "k3/tok/python_json.h"

namespace k3::tok {
namespace {

using Kind = JsonValue::Kind;

class RequestReader {
 public:
  RequestReader(const std::string& origin, const ChatRequestReadOptions& opts) : origin_(origin), opts_(opts) {}

  ChatRequest read(const JsonValue& root) {
    if (!root.isObject()) bad("request", std::string("expected an object, got ") + jsonKindName(root.kind));
    ChatRequest req;
    // Fields that would change the prompt but that K3's format cannot carry.
    for (const char* unsupported : {"functions", "function_call", "continue_final_message"})
      if (const JsonValue* v = present(root, unsupported); v && !(v->kind == Kind::Bool && !v->boolean))
        bad(unsupported, std::string(unsupported) == "continue_final_message"
                             ? "not supported (the prompt always ends with a new assistant turn or nothing)"
                             : "the deprecated function-calling fields are not supported (use tools / tool_choice)");
    const JsonValue* messages = root.find("messages");
    if (!messages) bad("messages", "missing (the conversation array is required)");
    expect(*messages, Kind::Array, "messages");
    if (const JsonValue* tools = present(root, "tools")) {
      expect(*tools, Kind::Array, "tools");
      if (!tools->items.empty()) {
        req.toolsJson = canonicalJson(*tools);
        readToolSpecs(*tools, "tools", req.tools);
      }
    }
    for (size_t i = 0; i < messages->items.size(); ++i)
      req.messages.push_back(readMessage(messages->items[i], "messages[" + std::to_string(i) + "]", req.tools));
    readToolChoice(root, req);
    readResponseFormat(root, req);
    if (const JsonValue* agp = present(root, "add_generation_prompt")) {
      expect(*agp, Kind::Bool, "add_generation_prompt");
      req.addGenerationPrompt = agp->boolean;
    }
    readThinking(root, req);
    return req;
  }

  [[noreturn]] void bad(const std::string& path, const std::string& what) const {
    fail(ErrorKind::Usage, origin_, ": ", path, ": ", what);
  }

 private:
  // A member that is there and not null (null means absent, as OpenAI reads it).
  static const JsonValue* present(const JsonValue& obj, std::string_view key) {
    const JsonValue* v = obj.find(key);
    return v && !v->isNull() ? v : nullptr;
  }

  void expect(const JsonValue& v, Kind kind, const std::string& path) const {
    const bool ok = v.kind == kind || (kind == Kind::Float && v.kind == Kind::Int);
    if (!ok) bad(path, std::string("expected ") + (kind == Kind::Array ? "an " : "a ") + jsonKindName(kind) + ", got " +
                           jsonKindName(v.kind));
  }

  std::string str(const JsonValue& obj, std::string_view key, const std::string& path) const {
    const JsonValue* v = present(obj, key);
    if (!v) return {};
    expect(*v, Kind::String, path + "." + std::string(key));
    return v->text;
  }

  void readToolSpecs(const JsonValue& tools, const std::string& path, std::vector<ToolSpec>& out) const {
    for (size_t i = 0; i < tools.items.size(); ++i) {
      const std::string at = path + "[" + std::to_string(i) + "]";
      const JsonValue& t = tools.items[i];
      expect(t, Kind::Object, at);
      const std::string type = str(t, "type", at);
      if (!type.empty() && type != "function") bad(at + ".type", "'" + type + "' is not supported (function only)");
      const JsonValue* fn = present(t, "function");
      if (!fn) bad(at + ".function", "missing");
      expect(*fn, Kind::Object, at + ".function");
      ToolSpec spec;
      spec.name = str(*fn, "name", at + ".function");
      if (spec.name.empty()) bad(at + ".function.name", "missing or empty");
      if (const JsonValue* strict = present(*fn, "strict")) {
        expect(*strict, Kind::Bool, at + ".function.strict");
        spec.strict = strict->boolean;
      }
      if (const JsonValue* params = present(*fn, "parameters")) {
        expect(*params, Kind::Object, at + ".function.parameters");
        spec.parametersJson = canonicalJson(*params);
        if (const JsonValue* props = present(*params, "properties")) {
          expect(*props, Kind::Object, at + ".function.parameters.properties");
          for (const auto& [key, schema] : props->members) {
            const JsonValue* type = schema.isObject() ? schema.find("type") : nullptr;
            spec.params.emplace_back(key, type && type->isString() ? type->text : std::string());
          }
        }
      }
      out.push_back(std::move(spec));
    }
  }

  std::vector<std::string> readContent(const JsonValue& m, const std::string& path) const {
    const JsonValue* c = present(m, "content");
    if (!c) return {};
    if (c->isString()) return {c->text};
    if (c->kind != Kind::Array)
      bad(path + ".content", std::string("expected a string, null or a list of text parts, got ") + jsonKindName(c->kind));
    std::vector<std::string> parts;
    for (size_t j = 0; j < c->items.size(); ++j) {
      const std::string at = path + ".content[" + std::to_string(j) + "]";
      const JsonValue& part = c->items[j];
      expect(part, Kind::Object, at);
      const std::string type = str(part, "type", at);
      if (type != "text") bad(at + ".type", "'" + type + "' is not supported (text parts only)");
      const JsonValue* text = part.find("text");
      if (!text) bad(at + ".text", "missing");
      expect(*text, Kind::String, at + ".text");
      parts.push_back(text->text);
    }
    return parts;
  }

  ToolCall readToolCall(const JsonValue& c, const std::string& at) const {
    expect(c, Kind::Object, at);
    ToolCall call;
    call.id = str(c, "id", at);
    const std::string type = str(c, "type", at);
    if (!type.empty() && type != "function") bad(at + ".type", "'" + type + "' is not supported (function only)");
    const JsonValue* fn = present(c, "function");
    if (!fn) bad(at + ".function", "missing");
    expect(*fn, Kind::Object, at + ".function");
    call.name = str(*fn, "name", at + ".function");
    if (call.name.empty()) bad(at + ".function.name", "missing or empty");
    if (const JsonValue* args = present(*fn, "arguments")) {
      if (args->isObject()) {
        // Given as an object: keep its members and literals as written.
        call.arguments = pyDumps(*args, {.sortKeys = false, .compact = true, .literalFloats = true});
      } else {
        expect(*args, Kind::String, at + ".function.arguments");
        call.arguments = args->text;
      }
      CallArguments parsed;
      std::string what;
      if (!readCallArguments(call.arguments, parsed, what)) bad(at + ".function.arguments", what);
    }
    return call;
  }

  ChatMessage readMessage(const JsonValue& m, const std::string& path, std::vector<ToolSpec>& specs) const {
    expect(m, Kind::Object, path);
    const JsonValue* role = m.find("role");
    if (!role) bad(path + ".role", "missing");
    expect(*role, Kind::String, path + ".role");
    ChatMessage msg;
    msg.role = role->text;
    if (msg.role == "developer" && opts_.developerAsSystem) msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
      bad(path + ".role", "unknown role '" + role->text + "' (system, user, assistant, tool)");
    for (const auto& [key, value] : m.members) {
      static const char* const known[] = {"role", "content", "name", "reasoning_content", "reasoning",
                                          "tool_calls", "tool_call_id", "tools"};
      bool isKnown = false;
      for (const char* k : known) isKnown = isKnown || key == k;
      if (!isKnown && !value.isNull()) bad(path + "." + key, "unknown message field (not rendered by the K3 format)");
    }
    msg.content = readContent(m, path);
    msg.name = str(m, "name", path);
    const std::string rc = str(m, "reasoning_content", path), r = str(m, "reasoning", path);
    if (!rc.empty() && !r.empty() && rc != r) bad(path + ".reasoning", "differs from reasoning_content (give one)");
    msg.reasoning = rc.empty() ? r : rc;
    if (!msg.reasoning.empty() && msg.role != "assistant") bad(path + ".reasoning_content", "only an assistant has reasoning");
    if (const JsonValue* calls = present(m, "tool_calls")) {
      expect(*calls, Kind::Array, path + ".tool_calls");
      if (!calls->items.empty() && msg.role != "assistant") bad(path + ".tool_calls", "only an assistant makes tool calls");
      for (size_t j = 0; j < calls->items.size(); ++j)
        msg.toolCalls.push_back(readToolCall(calls->items[j], path + ".tool_calls[" + std::to_string(j) + "]"));
    }
    msg.toolCallId = str(m, "tool_call_id", path);
    if (!msg.toolCallId.empty() && msg.role != "tool") bad(path + ".tool_call_id", "only a tool result answers a call");
    if (const JsonValue* tools = present(m, "tools")) {
      expect(*tools, Kind::Array, path + ".tools");
      if (!tools->items.empty()) {
        if (msg.role != "system") bad(path + ".tools", "only a system message declares tools");
        msg.toolsJson = canonicalJson(*tools);
        readToolSpecs(*tools, path + ".tools", specs);
      }
    }
    return msg;
  }

  void readToolChoice(const JsonValue& root, ChatRequest& req) const {
    const JsonValue* tc = present(root, "tool_choice");
    if (!tc) return;
    if (tc->isString()) {
      if (tc->text == "auto") req.toolChoice = ToolChoice::Auto;
      else if (tc->text == "none") req.toolChoice = ToolChoice::None;
      else if (tc->text == "required") req.toolChoice = ToolChoice::Required;
      else bad("tool_choice", "'" + tc->text + "' is not auto, none, required or a named function");
      return;
    }
    expect(*tc, Kind::Object, "tool_choice");
    const std::string type = str(*tc, "type", "tool_choice");
    if (type != "function") bad("tool_choice.type", "expected 'function', got '" + type + "'");
    const JsonValue* fn = present(*tc, "function");
    if (!fn) bad("tool_choice.function", "missing");
    expect(*fn, Kind::Object, "tool_choice.function");
    req.toolChoice = ToolChoice::Named;
    req.toolChoiceName = str(*fn, "name", "tool_choice.function");
    bool declared = false;
    for (const ToolSpec& s : req.tools) declared = declared || s.name == req.toolChoiceName;
    if (!declared) bad("tool_choice.function.name", "'" + req.toolChoiceName + "' is not a declared tool");
  }

  void readResponseFormat(const JsonValue& root, ChatRequest& req) const {
    const JsonValue* rf = present(root, "response_format");
    if (!rf) return;
    expect(*rf, Kind::Object, "response_format");
    const std::string type = str(*rf, "type", "response_format");
    if (type == "text") {
      req.responseFormat.kind = ResponseFormat::Kind::Text;
    } else if (type == "json_object") {
      req.responseFormat.kind = ResponseFormat::Kind::JsonObject;
    } else if (type == "json_schema") {
      const JsonValue* js = present(*rf, "json_schema");
      if (!js) bad("response_format.json_schema", "missing");
      expect(*js, Kind::Object, "response_format.json_schema");
      const JsonValue* schema = present(*js, "schema");
      if (!schema) bad("response_format.json_schema.schema", "missing");
      req.responseFormat.kind = ResponseFormat::Kind::JsonSchema;
      req.responseFormat.schemaJson = canonicalJson(*schema);
    } else {
      bad("response_format.type", "'" + type + "' is not text, json_object or json_schema");
    }
  }

  ThinkingEffort effortOf(const std::string& e, const std::string& path) const {
    if (e == "low") return ThinkingEffort::Low;
    if (e == "high") return ThinkingEffort::High;
    if (e == "max") return ThinkingEffort::Max;
    if (e == "medium") bad(path, "'medium' is advertised in K3's effort text but the encoder rejects it (low, high, max)");
    bad(path, "'" + e + "' is not low, high, max or null");
  }

  // thinking: chat_template_kwargs.thinking, else the legacy top-level
  // `thinking`, else off for reasoning_effort "none", else on. Effort: at most
  // one of chat_template_kwargs.thinking_effort and reasoning_effort; default
  // max (HF apply_chat_template), none in the legacy form.
  void readThinking(const JsonValue& root, ChatRequest& req) const {
    std::optional<bool> thinking;
    bool legacy = false;
    if (const JsonValue* t = present(root, "thinking")) {
      expect(*t, Kind::Bool, "thinking");
      thinking = t->boolean;
      legacy = true;
    }
    std::optional<ThinkingEffort> effort;
    std::string effortPath;
    if (const JsonValue* kw = present(root, "chat_template_kwargs")) {
      expect(*kw, Kind::Object, "chat_template_kwargs");
      for (const auto& [key, value] : kw->members) {
        const std::string at = "chat_template_kwargs." + key;
        if (key == "thinking") {
          if (value.isNull()) continue;
          expect(value, Kind::Bool, at);
          if (legacy) bad(at, "set both here and as top-level \"thinking\" (give one)");
          thinking = value.boolean;
        } else if (key == "thinking_effort") {
          if (value.isNull()) {
            effort = ThinkingEffort::None;
          } else {
            expect(value, Kind::String, at);
            effort = effortOf(value.text, at);
          }
          effortPath = at;
        } else {
          bad(at, "unknown template option (thinking, thinking_effort)");
        }
      }
    }
    if (const JsonValue* re = present(root, "reasoning_effort")) {
      expect(*re, Kind::String, "reasoning_effort");
      if (!effortPath.empty()) bad("reasoning_effort", "set together with " + effortPath + " (give one)");
      effortPath = "reasoning_effort";
      const std::string& e = re->text;
      if (e == "none") {
        if (thinking == true) bad("reasoning_effort", "'none' turns thinking off, but thinking is set on");
        thinking = false;
        effort = ThinkingEffort::None;
      } else if (e == "minimal" || e == "low") {
        effort = ThinkingEffort::Low;
      } else if (e == "medium" || e == "high") {
        effort = ThinkingEffort::High;
      } else if (e == "xhigh") {
        effort = ThinkingEffort::Max;
      } else {
        bad("reasoning_effort", "'" + e + "' is not none, minimal, low, medium, high or xhigh");
      }
    }
    req.thinking = thinking.value_or(true);
    if (!req.thinking) {
      if (effort && *effort != ThinkingEffort::None) bad(effortPath, "an effort is set but thinking is off");
      req.effort = ThinkingEffort::None;
      return;
    }
    req.effort = effort.value_or(legacy ? ThinkingEffort::None : ThinkingEffort::Max);
  }

  const std::string& origin_;
  const ChatRequestReadOptions& opts_;
};

}  // namespace

std::string canonicalJson(const JsonValue& v) { return pyDumps(v, {.sortKeys = true, .compact = true}); }

bool readCallArguments(std::string_view text, CallArguments& out, std::string& what) {
  out = {};
  if (text.empty()) return true;
  JsonValue v;
  if (!tryParseJson(text, v)) {
    out.kind = CallArguments::Kind::Raw;
    return true;
  }
  if (!v.isObject()) {
    what = std::string("JSON but not an object (") + jsonKindName(v.kind) + ")";
    return false;
  }
  out.kind = CallArguments::Kind::Object;
  out.object = std::move(v);
  return true;
}

ChatRequest chatRequestFromJson(const JsonValue& root, const std::string& origin, const ChatRequestReadOptions& options) {
  return RequestReader(origin, options).read(root);
}

ChatRequest parseChatRequest(std::string_view json, const std::string& origin, const ChatRequestReadOptions& options) {
  return chatRequestFromJson(parseJson(json, origin), origin, options);
}

}  // namespace k3::tok
