#include "k3/serve/response_json.h"

#include "k3/io/json_text.h"
#include "k3/tok/chat_output_message.h"

namespace k3::serve {

namespace {
std::string str(const std::string& s) { return jsonString(s); }
std::string finishJson(const std::string& f) { return f.empty() ? "null" : str(f); }

std::string head(const ResponseMeta& m, const char* object) {
  return "{\"id\":" + str(m.id) + ",\"object\":\"" + object + "\",\"created\":" + std::to_string(m.created) +
         ",\"model\":" + str(m.model);
}

}  // namespace

void addDelta(tok::ChatMessage& m, const OutputDelta& d) {
  switch (d.kind) {
    case OutputDelta::Kind::Reasoning: m.reasoning += d.text; break;
    case OutputDelta::Kind::Content:
      if (m.content.empty()) m.content.emplace_back();
      m.content[0] += d.text;
      break;
    case OutputDelta::Kind::ToolCall: {
      const size_t i = static_cast<size_t>(d.toolIndex);
      if (i >= m.toolCalls.size()) m.toolCalls.resize(i + 1);
      tok::ToolCall& c = m.toolCalls[i];
      if (!d.toolId.empty()) c.id = d.toolId;
      if (!d.toolName.empty()) c.name = d.toolName;
      c.arguments += d.text;
      break;
    }
  }
}

std::string contentOf(const tok::ChatMessage& m) { return m.content.empty() ? "" : m.content[0]; }

std::string usageJson(const GenerationUsage& u) {
  return "{\"prompt_tokens\":" + std::to_string(u.promptTokens) +
         ",\"completion_tokens\":" + std::to_string(u.completionTokens) +
         ",\"total_tokens\":" + std::to_string(u.promptTokens + u.completionTokens) +
         ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(u.cachedTokens) + "}}";
}

std::string chatCompletionJson(const ResponseMeta& m, const tok::ChatMessage& msg, const std::string& finish,
                               const GenerationUsage& u) {
  tok::ChatMessage out = msg;
  out.role = "assistant";
  return head(m, "chat.completion") + ",\"choices\":[{\"index\":0,\"message\":" + tok::assistantMessageJson(out) +
         ",\"logprobs\":null,\"finish_reason\":" + finishJson(finish) + "}],\"usage\":" + usageJson(u) + "}";
}

std::string chatDeltaJson(const OutputDelta& d) {
  switch (d.kind) {
    case OutputDelta::Kind::Reasoning: return "{\"reasoning_content\":" + str(d.text) + "}";
    case OutputDelta::Kind::Content: return "{\"content\":" + str(d.text) + "}";
    case OutputDelta::Kind::ToolCall: break;
  }
  std::string call = "{\"index\":" + std::to_string(d.toolIndex);
  if (!d.toolId.empty()) call += ",\"id\":" + str(d.toolId) + ",\"type\":\"function\"";
  call += ",\"function\":{";
  if (!d.toolName.empty()) call += "\"name\":" + str(d.toolName) + ",";
  call += "\"arguments\":" + str(d.text) + "}}";
  return "{\"tool_calls\":[" + call + "]}";
}

std::string chatChunkJson(const ResponseMeta& m, const std::string& deltaJson, const std::string& finish) {
  return head(m, "chat.completion.chunk") + ",\"choices\":[{\"index\":0,\"delta\":" + deltaJson +
         ",\"logprobs\":null,\"finish_reason\":" + finishJson(finish) + "}]}";
}

std::string chatUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u) {
  return head(m, "chat.completion.chunk") + ",\"choices\":[],\"usage\":" + usageJson(u) + "}";
}

std::string completionJson(const ResponseMeta& m, const std::string& text, const std::string& finish,
                           const GenerationUsage& u) {
  return head(m, "text_completion") + ",\"choices\":[{\"index\":0,\"text\":" + str(text) +
         ",\"logprobs\":null,\"finish_reason\":" + finishJson(finish) + "}],\"usage\":" + usageJson(u) + "}";
}

std::string completionChunkJson(const ResponseMeta& m, const std::string& text, const std::string& finish) {
  return head(m, "text_completion") + ",\"choices\":[{\"index\":0,\"text\":" + str(text) +
         ",\"logprobs\":null,\"finish_reason\":" + finishJson(finish) + "}]}";
}

std::string completionUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u) {
  return head(m, "text_completion") + ",\"choices\":[],\"usage\":" + usageJson(u) + "}";
}

std::string modelListJson(const std::string& model, int64_t created) {
  return "{\"object\":\"list\",\"data\":[{\"id\":" + str(model) + ",\"object\":\"model\",\"created\":" +
         std::to_string(created) + ",\"owned_by\":\"k3kit\"}]}";
}

}  // namespace k3::serve
