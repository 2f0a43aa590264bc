#include "k3/serve/response_json.h"

#include <charconv>
#include <cmath>

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

// Shortest text that reads back as the same float; −inf (a masked token) as −9999.
std::string logprobNumber(float v) {
  if (!std::isfinite(v)) return "-9999.0";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string bytesArray(const std::string& b) {
  std::string out = "[";
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(static_cast<unsigned char>(b[i]));
  }
  return out + "]";
}

std::string tokenLogprobJson(const std::string& token, float lp) {
  return "{\"token\":" + str(token) + ",\"logprob\":" + logprobNumber(lp) + ",\"bytes\":" + bytesArray(token);
}

size_t codePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string chatLogprobsJson(const std::vector<LogprobEntry>& entries) {
  std::string out = "{\"content\":[";
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogprobEntry& e = entries[i];
    if (i) out += ',';
    out += tokenLogprobJson(e.token, e.logprob) + ",\"top_logprobs\":[";
    for (size_t j = 0; j < e.top.size(); ++j) {
      if (j) out += ',';
      out += tokenLogprobJson(e.top[j].first, e.top[j].second) + "}";
    }
    out += "]}";
  }
  return out + "],\"refusal\":null}";
}

std::string completionLogprobsJson(const std::vector<LogprobEntry>& entries, size_t& textOffset) {
  std::string tokens, values, tops, offsets;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LogprobEntry& e = entries[i];
    if (i) {  // (appends, not `sep + str(...)`: GCC 12 warns falsely on that)
      tokens += ',';
      values += ',';
      offsets += ',';
      tops += ',';
    }
    tokens += str(e.token);
    values += logprobNumber(e.logprob);
    offsets += std::to_string(textOffset);
    textOffset += codePoints(e.token);
    // A token → logprob object; equal keys appear once (the likelier). Keys
    // compare as written: partial UTF-8 characters all become U+FFFD.
    std::string top = "{";
    std::vector<std::string> keys;
    auto add = [&](const std::string& t, float lp) {
      const std::string key = str(t);
      for (const auto& k : keys)
        if (k == key) return;
      if (!keys.empty()) top += ',';
      keys.push_back(key);
      top += key + ":" + logprobNumber(lp);
    };
    for (const auto& [t, lp] : e.top) add(t, lp);
    add(e.token, e.logprob);
    tops += top;
    tops += '}';
  }
  return "{\"tokens\":[" + tokens + "],\"token_logprobs\":[" + values + "],\"top_logprobs\":[" + tops +
         "],\"text_offset\":[" + offsets + "]}";
}

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
    case OutputDelta::Kind::Logprob: break;  // not part of the message
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
                               const GenerationUsage& u, const std::string& logprobsJson) {
  tok::ChatMessage out = msg;
  out.role = "assistant";
  return head(m, "chat.completion") + ",\"choices\":[{\"index\":0,\"message\":" + tok::assistantMessageJson(out) +
         ",\"logprobs\":" + logprobsJson + ",\"finish_reason\":" + finishJson(finish) + "}],\"usage\":" + usageJson(u) + "}";
}

std::string chatDeltaJson(const OutputDelta& d) {
  switch (d.kind) {
    case OutputDelta::Kind::Reasoning: return "{\"reasoning_content\":" + str(d.text) + "}";
    case OutputDelta::Kind::Content: return "{\"content\":" + str(d.text) + "}";
    case OutputDelta::Kind::ToolCall: break;
    case OutputDelta::Kind::Logprob: return "{}";
  }
  std::string call = "{\"index\":" + std::to_string(d.toolIndex);
  if (!d.toolId.empty()) call += ",\"id\":" + str(d.toolId) + ",\"type\":\"function\"";
  call += ",\"function\":{";
  if (!d.toolName.empty()) call += "\"name\":" + str(d.toolName) + ",";
  call += "\"arguments\":" + str(d.text) + "}}";
  return "{\"tool_calls\":[" + call + "]}";
}

std::string chatChunkJson(const ResponseMeta& m, const std::string& deltaJson, const std::string& finish,
                          const std::string& logprobsJson) {
  return head(m, "chat.completion.chunk") + ",\"choices\":[{\"index\":0,\"delta\":" + deltaJson +
         ",\"logprobs\":" + logprobsJson + ",\"finish_reason\":" + finishJson(finish) + "}]}";
}

std::string chatUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u) {
  return head(m, "chat.completion.chunk") + ",\"choices\":[],\"usage\":" + usageJson(u) + "}";
}

std::string completionJson(const ResponseMeta& m, const std::string& text, const std::string& finish,
                           const GenerationUsage& u, const std::string& logprobsJson) {
  return head(m, "text_completion") + ",\"choices\":[{\"index\":0,\"text\":" + str(text) +
         ",\"logprobs\":" + logprobsJson + ",\"finish_reason\":" + finishJson(finish) + "}],\"usage\":" + usageJson(u) + "}";
}

std::string completionChunkJson(const ResponseMeta& m, const std::string& text, const std::string& finish,
                                const std::string& logprobsJson) {
  return head(m, "text_completion") + ",\"choices\":[{\"index\":0,\"text\":" + str(text) +
         ",\"logprobs\":" + logprobsJson + ",\"finish_reason\":" + finishJson(finish) + "}]}";
}

std::string completionUsageChunkJson(const ResponseMeta& m, const GenerationUsage& u) {
  return head(m, "text_completion") + ",\"choices\":[],\"usage\":" + usageJson(u) + "}";
}

std::string modelListJson(const std::string& model, int64_t created) {
  return "{\"object\":\"list\",\"data\":[{\"id\":" + str(model) + ",\"object\":\"model\",\"created\":" +
         std::to_string(created) + ",\"owned_by\":\"k3kit\"}]}";
}

}  // namespace k3::serve
