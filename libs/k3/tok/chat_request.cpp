#include "k3/tok/chat_request.h"

#include <simdjson.h>

#include "k3/io/error.h"

namespace k3::tok {

ChatRequest parseChatRequest(std::string_view json, const std::string& origin) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root)) fail(ErrorKind::Format, origin, ": not valid JSON");
  ChatRequest req;
  simdjson::dom::array messages;
  if (root["messages"].get_array().get(messages)) fail(ErrorKind::Format, origin, ": no \"messages\" array");
  for (simdjson::dom::element m : messages) {
    ChatMessage msg;
    std::string_view s;
    if (m["role"].get_string().get(s)) fail(ErrorKind::Format, origin, ": a message has no \"role\" string");
    msg.role = std::string(s);
    if (!m["content"].get_string().get(s)) msg.content = std::string(s);
    if (!m["reasoning"].get_string().get(s)) msg.reasoning = std::string(s);
    req.messages.push_back(std::move(msg));
  }
  bool b = false;
  if (!root["thinking"].get_bool().get(b)) req.options.thinking = b;
  if (!root["add_generation_prompt"].get_bool().get(b)) req.options.addGenerationPrompt = b;
  return req;
}

}  // namespace k3::tok
