// Chat-completions values (OpenAI's request schema, spec §7.6) shared by the
// request reader (chat_request.h: JSON -> ChatRequest), the XTML encoder
// (chat_encoder.h: ChatRequest -> segments -> ids) and the model-output parser
// (chat_output_parser.h: generated ids -> assistant message). Plain values:
// JSON text lives only at the edges.
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace k3::tok {

struct ToolCall {
  std::string id;         // OpenAI "call_…" id; a tool result names it in tool_call_id
  std::string name;       // the function's name
  std::string arguments;  // JSON text, as OpenAI carries it: an object, "" for none, or raw text
};

struct ChatMessage {
  std::string role;                  // system | user | assistant | tool
  std::vector<std::string> content;  // text parts: a string is one part, null none
  std::string reasoning;             // assistant: reasoning_content (or reasoning)
  std::string name;                  // optional name attribute (system/user/assistant)
  std::string toolCallId;            // tool: the call it answers
  std::vector<ToolCall> toolCalls;   // assistant
  std::string toolsJson;             // system carrying `tools` (dynamic declaration): canonical array text
  // assistant: the ids a server generated for this message, everything after
  // its first channel's OPEN through <|end_of_msg|>; when set the encoder uses
  // them instead of re-encoding the text (which may tokenize differently).
  std::vector<uint32_t> bodyIds;
};

enum class ThinkingEffort { None, Low, High, Max };
enum class ToolChoice { Auto, None, Required, Named };  // Named renders nothing

struct ResponseFormat {
  enum class Kind { Text, JsonObject, JsonSchema };
  Kind kind = Kind::Text;
  std::string schemaJson;  // JsonSchema: json_schema.schema, canonical text
};

// A declared tool as the output parser checks a call against it: the name and
// each parameter's declared JSON-schema type ("string", "number", "integer",
// "boolean", "object", "array", "null"; "" when undeclared or a union); and
// what the output grammar (grammar_output.h) builds its arguments from.
struct ToolSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params;  // (key, type), in schema order
  std::string parametersJson = {};  // the `parameters` schema, canonical; "" = none
  bool strict = false;         // function.strict: arguments must follow the schema
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::string toolsJson;        // top-level `tools`, canonical (keys sorted, compact, UTF-8); "" = none
  std::vector<ToolSpec> tools;  // every declared tool (top-level and dynamic), for the parser
  ToolChoice toolChoice = ToolChoice::Auto;
  std::string toolChoiceName;   // ToolChoice::Named
  ResponseFormat responseFormat;
  bool thinking = true;
  ThinkingEffort effort = ThinkingEffort::Max;  // None: no effort turn
  bool addGenerationPrompt = true;
};

}  // namespace k3::tok
