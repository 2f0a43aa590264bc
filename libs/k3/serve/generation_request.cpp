#include "k3/serve/generation_request.h"

#include <algorithm>
#include <set>

#include "k3/io/error.h"
#include "k3/serve/api_error.h"
#include "k3/serve/json_body.h"
#include "k3/tok/chat_request.h"

namespace k3::serve {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

bool isNull(element v) { return v.is_null(); }

std::vector<std::string> readStops(element v, const RequestLimits& limits) {
  std::vector<std::string> stops;
  std::string_view s;
  simdjson::dom::array arr;
  if (!v.get_string().get(s)) {
    stops.emplace_back(s);
  } else if (!v.get_array().get(arr)) {
    for (element e : arr) stops.push_back(readString(e, "stop"));
  } else {
    invalidRequest("stop", "'stop' must be a string or an array of strings");
  }
  if (stops.size() > limits.maxStops)
    invalidRequest("stop", "'stop' holds " + std::to_string(stops.size()) + " strings; at most " +
                               std::to_string(limits.maxStops) + " are allowed");
  for (const auto& st : stops)
    if (st.empty()) invalidRequest("stop", "'stop' strings must not be empty");
  return stops;
}

void refuseUnless(bool ok, const std::string& key, const std::string& what) {
  if (!ok) invalidRequest(key, "'" + key + "' " + what + " is not supported by this server", "unsupported_parameter");
}

// One field of the shared schema; false when `key` is not one of them.
bool readCommon(const std::string& key, element v, GenerationParams& p, const RequestLimits& limits,
                bool& maxGiven) {
  if (key == "model") {
    p.model = readString(v, key);
  } else if (key == "max_tokens" || key == "max_completion_tokens") {
    const int64_t n = readInteger(v, key, 1, INT64_MAX);
    p.maxTokens = std::min<uint64_t>(static_cast<uint64_t>(n), limits.maxTokens);
    maxGiven = true;
  } else if (key == "temperature") {
    p.sampling.temperature = static_cast<float>(readNumber(v, key, 0.0, 2.0));
  } else if (key == "top_p") {
    p.sampling.topP = static_cast<float>(readNumber(v, key, 0.0, 1.0));
  } else if (key == "top_k") {
    p.sampling.topK = static_cast<int>(readInteger(v, key, 0, 1 << 24));
  } else if (key == "seed") {
    p.sampling.seed = static_cast<uint64_t>(readInteger(v, key, INT64_MIN, INT64_MAX));
    p.seeded = true;
  } else if (key == "stop") {
    p.stop = readStops(v, limits);
  } else if (key == "stream") {
    p.stream = readBool(v, key);
  } else if (key == "stream_options") {
    object o;
    if (v.get_object().get(o)) invalidRequest(key, "'stream_options' must be an object");
    for (auto [k, sv] : o) {
      if (k != "include_usage") invalidRequest(key, "'stream_options." + std::string(k) + "' is not supported");
      if (!isNull(sv)) p.includeUsage = readBool(sv, "stream_options.include_usage");
    }
  } else if (key == "n" || key == "best_of") {
    refuseUnless(readInteger(v, key, 1, INT64_MAX) == 1, key, "> 1");
  } else if (key == "logprobs") {
    bool on = false;
    int64_t k = 0;
    if (!v.get_bool().get(on)) refuseUnless(!on, key, "true");
    else if (!v.get_int64().get(k)) refuseUnless(k == 0, key, "> 0");
    else invalidRequest(key, "'logprobs' must be a boolean or an integer");
  } else if (key == "top_logprobs") {
    refuseUnless(readInteger(v, key, 0, 20) == 0, key, "> 0");
  } else if (key == "frequency_penalty" || key == "presence_penalty") {
    refuseUnless(readNumber(v, key, -2.0, 2.0) == 0.0, key, "other than 0");
  } else if (key == "logit_bias") {
    object o;
    if (v.get_object().get(o)) invalidRequest(key, "'logit_bias' must be an object");
    refuseUnless(o.size() == 0, key, "with entries");
  } else if (key == "user" || key == "service_tier") {
    readString(v, key);  // accepted, no effect on generation
  } else if (key == "metadata" || key == "store") {
    // accepted, nothing is stored
  } else {
    return false;
  }
  return true;
}

void finish(GenerationParams& p, bool maxGiven, const RequestLimits& limits) {
  if (!maxGiven) p.maxTokens = limits.maxTokens;
  if (p.includeUsage && !p.stream) invalidRequest("stream_options", "'stream_options' needs 'stream': true");
}

// Parses the body and walks its fields: the shared ones into `p`, the rest
// (null = not given, as the OpenAI SDKs send it) to endpointField(key, value).
template <typename F>
void readFields(std::string_view body, const RequestLimits& limits, GenerationParams& p, F endpointField) {
  simdjson::dom::parser parser;
  const object root = parseJsonBody(parser, body, limits.jsonDepth);
  bool maxGiven = false;
  p.sampling = limits.sampling;
  for (auto [k, v] : root) {
    const std::string key(k);
    if (!isNull(v) && !readCommon(key, v, p, limits, maxGiven)) endpointField(key, v);
  }
  finish(p, maxGiven, limits);
}

}  // namespace

ChatCompletionRequest parseChatCompletionRequest(std::string_view body, const RequestLimits& limits) {
  ChatCompletionRequest r;
  bool sawMessages = false;
  readFields(body, limits, r.params, [&](const std::string& key, element v) {
    if (key == "messages" || key == "tools" || key == "tool_choice" || key == "response_format" ||
        key == "chat_template_kwargs" || key == "reasoning_effort" || key == "add_generation_prompt") {
      sawMessages = sawMessages || key == "messages";  // read by the chat-request reader below
    } else if (key == "parallel_tool_calls") {
      readBool(v, key);
    } else if (key == "modalities") {
      simdjson::dom::array arr;
      if (v.get_array().get(arr)) invalidRequest(key, "'modalities' must be an array");
      for (element e : arr) refuseUnless(readString(e, key) == "text", key, "other than [\"text\"]");
    } else if (key == "audio" || key == "prediction" || key == "web_search_options" || key == "functions" ||
               key == "function_call") {
      refuseUnless(false, key, "");
    } else {
      invalidRequest(key, "unknown field '" + key + "'");
    }
  });
  if (!sawMessages) invalidRequest("messages", "'messages' is required");
  try {
    r.chat = tok::parseChatRequest(body, "request", {.developerAsSystem = true});
  } catch (const k3::Error& e) {
    // "request: messages[2].content: …" -> param messages[2].content, message without the origin
    std::string msg = e.what();
    if (msg.rfind("request: ", 0) == 0) msg.erase(0, 9);
    invalidRequest(msg.substr(0, msg.find(':')), msg);
  }
  if (r.chat.messages.empty()) invalidRequest("messages", "'messages' must not be empty");
  return r;
}

CompletionRequest parseCompletionRequest(std::string_view body, const RequestLimits& limits) {
  CompletionRequest r;
  bool sawPrompt = false;
  readFields(body, limits, r.params, [&](const std::string& key, element v) {
    if (key == "prompt") {
      sawPrompt = true;
      std::string_view s;
      simdjson::dom::array arr;
      if (!v.get_string().get(s)) {
        r.promptText = std::string(s);
      } else if (!v.get_array().get(arr)) {
        r.promptIsIds = true;
        for (element e : arr) {
          int64_t id = 0;
          if (e.get_int64().get(id) || id < 0 || id > INT32_MAX)
            invalidRequest("prompt", "'prompt' must be a string or an array of token ids (integers ≥ 0); "
                                     "a batch of prompts is not supported");
          r.promptIds.push_back(static_cast<int32_t>(id));
        }
        if (r.promptIds.empty()) invalidRequest("prompt", "'prompt' must not be an empty array");
      } else {
        invalidRequest("prompt", "'prompt' must be a string or an array of token ids");
      }
    } else if (key == "echo") {
      refuseUnless(!readBool(v, key), key, "true");
    } else if (key == "suffix") {
      refuseUnless(false, key, "");
    } else {
      invalidRequest(key, "unknown field '" + key + "'");
    }
  });
  if (!sawPrompt) invalidRequest("prompt", "'prompt' is required");
  return r;
}

}  // namespace k3::serve
