// OpenAI chat-completions request JSON -> ChatRequest (chat_message.h), the
// input of the XTML encoder. Reads messages (system/user/assistant/tool),
// tools, tool_choice, response_format, add_generation_prompt,
// chat_template_kwargs.{thinking,thinking_effort} and reasoning_effort; the
// other request fields (model, sampling, stream, …) belong to the server and
// are not looked at. The legacy form {"messages": […], "thinking": bool}
// (top-level `thinking`) is the encoder called directly: effort none unless
// given. Errors: k3::Error(Usage) "origin: messages[3].tool_calls[0].function
// .arguments: JSON but not an object" — one line, naming the field.
// docs/CHAT.md lists every rule.
// Thread-safety: a pure reader; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "k3/tok/chat_message.h"
#include "k3/tok/json_value.h"

namespace k3::tok {

struct ChatRequestReadOptions {
  // Map role `developer` to `system` (what an OpenAI-compatible server does,
  // spec §7.6); off, it is an unknown role like any other.
  bool developerAsSystem = false;
};

ChatRequest parseChatRequest(std::string_view json, const std::string& origin,
                             const ChatRequestReadOptions& options = {});
ChatRequest chatRequestFromJson(const JsonValue& root, const std::string& origin,
                                const ChatRequestReadOptions& options = {});

// Canonical text of a tools array / schema: json.dumps(v, sort_keys=True,
// separators=(",", ":"), ensure_ascii=False).
std::string canonicalJson(const JsonValue& v);

// A tool call's `arguments` as the encoder reads it (spec §7.6): "" = no
// arguments, a JSON object = typed arguments, text that is not JSON = one raw
// block. JSON that is not an object is an error (returns false, `what` says why).
struct CallArguments {
  enum class Kind { None, Object, Raw };
  Kind kind = Kind::None;
  JsonValue object;  // Kind::Object
};
bool readCallArguments(std::string_view text, CallArguments& out, std::string& what);

}  // namespace k3::tok
