#include "k3/serve/generation_request.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "k3/io/error.h"
#include "k3/model/token_logprobs.h"
#include "k3/serve/api_error.h"
#include "k3/serve/json_body.h"
#include "k3/tok/chat_request.h"
#include "k3/tok/grammar_output.h"

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

// logit_bias: {"<token id>": bias in [-100, 100], ...}.
std::vector<std::pair<int32_t, float>> readLogitBias(element v, const RequestLimits& limits) {
  object o;
  if (v.get_object().get(o)) invalidRequest("logit_bias", "'logit_bias' must be an object of token id → bias");
  std::map<int32_t, float> bias;  // a repeated key: the last one holds
  for (auto [k, bv] : o) {
    const std::string key(k);
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > INT32_MAX)
      invalidRequest("logit_bias", "'logit_bias' key '" + key + "' is not a token id");
    if (limits.vocabSize && static_cast<uint64_t>(id) >= limits.vocabSize)
      invalidRequest("logit_bias", "'logit_bias' key " + key + " is outside the vocabulary (" +
                                       std::to_string(limits.vocabSize) + " tokens)");
    bias[static_cast<int32_t>(id)] =
        static_cast<float>(readNumber(bv, "logit_bias." + key, -model::kMaxLogitBias, model::kMaxLogitBias));
  }
  return {bias.begin(), bias.end()};
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
  } else if (key == "top_k") {  // -1: off, as vLLM and llama-server write it
    p.sampling.topK = std::max(0, static_cast<int>(readInteger(v, key, -1, 1 << 24)));
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
  } else if (key == "min_p") {
    p.sampling.minP = static_cast<float>(readNumber(v, key, 0.0, 1.0));
  } else if (key == "presence_penalty") {
    p.processing.presencePenalty = static_cast<float>(readNumber(v, key, -model::kMaxPenalty, model::kMaxPenalty));
  } else if (key == "frequency_penalty") {
    p.processing.frequencyPenalty = static_cast<float>(readNumber(v, key, -model::kMaxPenalty, model::kMaxPenalty));
  } else if (key == "repetition_penalty") {
    // The float is what is used and checked: a tiny double rounds to 0.
    const float r = static_cast<float>(readNumber(v, key, 0.0, model::kMaxRepetitionPenalty));
    if (!(r >= model::kMinRepetitionPenalty))
      invalidRequest(key, "'repetition_penalty' must be in [0.01, 100] (1 = off)");
    p.processing.repetitionPenalty = r;
  } else if (key == "logit_bias") {
    p.processing.logitBias = readLogitBias(v, limits);
  } else if (key == "cache_prompt" || key == "length_penalty") {
    // llama-server's cache_prompt: reuse is always on (--state-cache-gb) and
    // never changes the output; vLLM's length_penalty: beam search only.
    if (key == "cache_prompt") readBool(v, key);
    else readNumber(v, key, -1e9, 1e9);
  } else if (key == "include_stop_str_in_output" || key == "ignore_eos" || key == "use_beam_search") {
    refuseUnless(!readBool(v, key), key, "true");  // vLLM's; false is what this server does
  } else if (key == "min_tokens") {
    refuseUnless(readInteger(v, key, 0, INT64_MAX) == 0, key, "> 0");  // vLLM's; 0 is what this server does
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
    } else if (key == "logprobs") {
      if (v.is_int64() || v.is_uint64()) invalidRequest(key, "chat 'logprobs' is a boolean; give the count as 'top_logprobs'");
      r.params.logprobs = readBool(v, key);
    } else if (key == "top_logprobs") {
      r.params.topLogprobs = static_cast<size_t>(readInteger(v, key, 0, model::kMaxTopLogprobs));
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
  if (r.params.topLogprobs > 0 && !r.params.logprobs)
    invalidRequest("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  try {
    r.chat = tok::parseChatRequest(body, "request", {.developerAsSystem = true});
  } catch (const k3::Error& e) {
    // "request: messages[2].content: …" -> param messages[2].content, message without the origin
    std::string msg = e.what();
    if (msg.rfind("request: ", 0) == 0) msg.erase(0, 9);
    invalidRequest(msg.substr(0, msg.find(':')), msg);
  }
  if (r.chat.messages.empty()) invalidRequest("messages", "'messages' must not be empty");
  try {
    r.grammar = tok::chatOutputGrammar(r.chat);
  } catch (const k3::Error& e) {
    // "response_format.json_schema.schema.properties.d.format: keyword 'format' …" -> that param
    const std::string msg = e.what();
    invalidRequest(msg.substr(0, std::min(msg.find(':'), msg.find(' '))), msg);
  }
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
    } else if (key == "logprobs") {  // completions: the number of alternatives per token
      if (v.is_bool()) invalidRequest(key, "completions 'logprobs' is an integer (alternatives per token, 0-20)");
      r.params.logprobs = true;
      r.params.topLogprobs = static_cast<size_t>(readInteger(v, key, 0, model::kMaxTopLogprobs));
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
