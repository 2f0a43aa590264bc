#include "k3/tok/grammar_output.h"

#include <string>
#include <vector>

#include "k3/io/error.h"
#include "k3/tok/chat_output_marker.h"
#include "k3/tok/grammar_schema.h"
#include "k3/tok/json_value.h"

namespace k3::tok {
namespace {

// A literal of bytes and structure tokens: "\x01" stands for <|open|>,
// "\x02" <|close|>, "\x03" <|sep|>, "\x04" <|end_of_msg|> (none occurs in
// the text these literals are built from: tags, escaped names, digits).
uint32_t marked(Grammar& g, std::string_view text) {
  std::vector<uint16_t> s;
  for (char c : text) {
    switch (c) {
      case '\x01': s.push_back(kSymOpen); break;
      case '\x02': s.push_back(kSymClose); break;
      case '\x03': s.push_back(kSymSep); break;
      case '\x04': s.push_back(kSymEndOfMsg); break;
      default: s.push_back(static_cast<uint8_t>(c));
    }
  }
  return g.literal(std::vector<std::vector<uint16_t>>{s});
}

// Replaces the stand-ins if a name contains them (control bytes are legal in a JSON name).
std::string plain(std::string_view s) {
  std::string out;
  for (char c : s) out += (c >= '\x01' && c <= '\x04') ? '?' : c;
  return out;
}

}  // namespace

std::shared_ptr<const Grammar> chatOutputGrammar(const ChatRequest& req) {
  const bool forced = !req.tools.empty() && (req.toolChoice == ToolChoice::Required || req.toolChoice == ToolChoice::Named);
  bool anyStrict = false;
  for (const ToolSpec& t : req.tools) anyStrict = anyStrict || t.strict;
  const bool callsAllowed = !req.tools.empty() && req.toolChoice != ToolChoice::None;
  const bool format = req.responseFormat.kind != ResponseFormat::Kind::Text;
  if (!forced && !format && !(anyStrict && callsAllowed)) return nullptr;
  if (!req.addGenerationPrompt)
    fail(ErrorKind::Usage, "add_generation_prompt: false leaves no answer to constrain (response_format, tool_choice or a strict tool asked for one)");
  for (char c : std::string_view(req.toolChoiceName))
    if (c >= '\x01' && c <= '\x04') fail(ErrorKind::Usage, "tool_choice.function.name: control characters are not supported");

  auto g = std::make_shared<Grammar>();
  std::vector<uint32_t> parts;
  if (req.thinking) parts = {g->leaf(GrammarNode::Kind::FreeText), marked(*g, "\x02think\x03\x01response\x03")};

  // The arguments grammar of each tool (shared by its calls at every index).
  std::vector<uint32_t> args(req.tools.size(), UINT32_MAX);
  auto argsOf = [&](size_t i) {
    if (args[i] != UINT32_MAX) return args[i];
    const ToolSpec& t = req.tools[i];
    SchemaCompiler sc(*g, "tools: function '" + t.name + "' parameters");
    JsonValue params;
    if (t.parametersJson.empty()) {
      params.kind = JsonValue::Kind::Bool;
      params.boolean = true;
    } else {
      params = parseJson(t.parametersJson, "tools");
    }
    try {
      args[i] = sc.xtmlArguments(params);
    } catch (const k3::Error&) {
      if (t.strict) throw;
      JsonValue any;
      any.kind = JsonValue::Kind::Bool;
      any.boolean = true;
      args[i] = SchemaCompiler(*g, "tools").xtmlArguments(any);  // free arguments for a non-strict tool
    }
    return args[i];
  };
  auto call = [&](int index) {
    std::vector<uint32_t> alts;
    for (size_t i = 0; i < req.tools.size(); ++i) {
      if (req.toolChoice == ToolChoice::Named && req.tools[i].name != req.toolChoiceName) continue;
      const std::string open = "\x01" "call tool=\"" + plain(escapeAttribute(req.tools[i].name)) + "\" index=\"" + std::to_string(index) + "\"\x03";
      alts.push_back(g->seq({marked(*g, open), argsOf(i), marked(*g, "\x02" "call\x03")}));
    }
    return g->choice(std::move(alts));
  };
  auto calls = [&] {
    const int most = req.toolChoice == ToolChoice::Named ? 1 : kMaxCalls;
    // call 1, then optionally call 2, then optionally call 3, …
    uint32_t tail = UINT32_MAX;
    for (int i = most; i >= 1; --i) tail = tail == UINT32_MAX ? call(i) : g->seq({call(i), g->choice({g->seq({}), tail})});
    return g->seq({marked(*g, "\x01tools\x03"), tail, marked(*g, "\x02tools\x03")});
  };

  if (forced) {
    parts.push_back(marked(*g, "\x02response\x03"));
    parts.push_back(calls());
  } else {
    if (req.responseFormat.kind == ResponseFormat::Kind::JsonSchema) {
      SchemaCompiler sc(*g, "response_format.json_schema.schema");
      parts.push_back(sc.json(parseJson(req.responseFormat.schemaJson, "response_format.json_schema.schema")));
    } else if (req.responseFormat.kind == ResponseFormat::Kind::JsonObject) {
      parts.push_back(SchemaCompiler(*g, "response_format").anyObject());
    } else {
      parts.push_back(g->leaf(GrammarNode::Kind::FreeText));
    }
    parts.push_back(marked(*g, "\x02response\x03"));
    if (callsAllowed) parts.push_back(g->choice({g->seq({}), calls()}));
  }
  parts.push_back(marked(*g, "\x02message\x03\x04"));
  g->setRoot(g->seq(std::move(parts)));
  return g;
}

}  // namespace k3::tok
