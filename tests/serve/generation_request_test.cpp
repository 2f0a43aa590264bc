// The server's part of the request schema: defaults, clamps, the fields it
// refuses (400, naming the field), and the conversation handed to the tok
// reader with developer read as system.
#include <gtest/gtest.h>

#include "k3/serve/api_error.h"
#include "k3/serve/generation_request.h"

namespace {

using namespace k3::serve;

RequestLimits limits() { return {100, 16, 4, 1000}; }

ApiError errorOf(const std::string& body, bool chat = true) {
  try {
    if (chat)
      parseChatCompletionRequest(body, limits());
    else
      parseCompletionRequest(body, limits());
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "", "", "", "");
}

const std::string kUser = R"("messages":[{"role":"user","content":"hi"}])";

TEST(GenerationRequest, DefaultsAndClamp) {
  auto r = parseChatCompletionRequest("{" + kUser + "}", limits());
  EXPECT_EQ(r.params.maxTokens, 100u);  // the clamp is also the default
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.params.seeded);
  EXPECT_FALSE(r.params.stream);
  ASSERT_EQ(r.chat.messages.size(), 1u);
  r = parseChatCompletionRequest("{" + kUser + R"(,"max_tokens":1000000000000,"temperature":0,"top_k":5,"top_p":0.5,"seed":-3,"stop":"END","stream":true,"stream_options":{"include_usage":true},"user":"u","n":1})", limits());
  EXPECT_EQ(r.params.maxTokens, 100u);
  EXPECT_EQ(r.params.sampling.topK, 5);
  EXPECT_FLOAT_EQ(r.params.sampling.topP, 0.5f);
  EXPECT_TRUE(r.params.seeded);
  EXPECT_EQ(r.params.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r.params.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.params.includeUsage);
  r = parseChatCompletionRequest("{" + kUser + R"(,"max_completion_tokens":7,"temperature":null})", limits());
  EXPECT_EQ(r.params.maxTokens, 7u);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);  // null = not given
}

// The sampling defaults are the server's (the container's
// generation_config.json, as k3-run's): a field given overrides its own only.
TEST(GenerationRequest, SamplingDefaultsComeFromTheServer) {
  RequestLimits l = limits();
  l.sampling = {0.7f, 9, 0.8f, 0};
  auto r = parseChatCompletionRequest("{" + kUser + "}", l);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.7f);
  EXPECT_EQ(r.params.sampling.topK, 9);
  EXPECT_FLOAT_EQ(r.params.sampling.topP, 0.8f);
  r = parseChatCompletionRequest("{" + kUser + R"(,"top_p":0.5,"temperature":null})", l);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.7f);
  EXPECT_EQ(r.params.sampling.topK, 9);
  EXPECT_FLOAT_EQ(r.params.sampling.topP, 0.5f);
  const auto c = parseCompletionRequest(R"({"prompt":"x","temperature":0})", l);
  EXPECT_FLOAT_EQ(c.params.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(c.params.sampling.topP, 0.8f);
}

TEST(GenerationRequest, DeveloperIsSystemAndTheConversationIsTheReaders) {
  auto r = parseChatCompletionRequest(
      R"({"messages":[{"role":"developer","content":"rules"},{"role":"user","content":"hi"}],"chat_template_kwargs":{"thinking":false}})",
      limits());
  ASSERT_EQ(r.chat.messages.size(), 2u);
  EXPECT_EQ(r.chat.messages[0].role, "system");
  EXPECT_FALSE(r.chat.thinking);
}

TEST(GenerationRequest, RefusalsNameTheField) {
  struct Case {
    std::string body, param, code;
  };
  const std::vector<Case> cases = {
      {"{" + kUser + R"(,"n":2})", "n", "unsupported_parameter"},
      {"{" + kUser + R"(,"logprobs":3})", "logprobs", ""},
      {"{" + kUser + R"(,"top_logprobs":2})", "top_logprobs", ""},
      {"{" + kUser + R"(,"logprobs":true,"top_logprobs":21})", "top_logprobs", ""},
      {"{" + kUser + R"(,"frequency_penalty":2.5})", "frequency_penalty", ""},
      {"{" + kUser + R"(,"presence_penalty":-3})", "presence_penalty", ""},
      {"{" + kUser + R"(,"repetition_penalty":0})", "repetition_penalty", ""},
      // 3e-60 is > 0 as a double but 0 as the float that is used (found by serve_request_fuzz)
      {"{" + kUser + R"(,"repetition_penalty":3e-60})", "repetition_penalty", ""},
      {"{" + kUser + R"(,"repetition_penalty":0.009})", "repetition_penalty", ""},
      {"{" + kUser + R"(,"min_p":1.5})", "min_p", ""},
      {"{" + kUser + R"(,"logit_bias":{"x1":5}})", "logit_bias", ""},
      {"{" + kUser + R"(,"logit_bias":{"-1":5}})", "logit_bias", ""},
      {"{" + kUser + R"(,"logit_bias":{"1000":5}})", "logit_bias", ""},  // vocabulary 1000
      {"{" + kUser + R"(,"logit_bias":{"5":101}})", "logit_bias.5", ""},
      {"{" + kUser + R"(,"logit_bias":[1]})", "logit_bias", ""},
      {"{" + kUser + R"(,"ignore_eos":true})", "ignore_eos", "unsupported_parameter"},
      {"{" + kUser + R"(,"min_tokens":3})", "min_tokens", "unsupported_parameter"},
      {"{" + kUser + R"(,"top_k":-2})", "top_k", ""},
      {"{" + kUser + R"(,"audio":{}})", "audio", "unsupported_parameter"},
      {"{" + kUser + R"(,"temperature":3})", "temperature", ""},
      {"{" + kUser + R"(,"max_tokens":0})", "max_tokens", ""},
      {"{" + kUser + R"(,"stop":["a","b","c","d","e"]})", "stop", ""},
      {"{" + kUser + R"(,"stream_options":{"include_usage":true}})", "stream_options", ""},
      {"{" + kUser + R"(,"bogus":1})", "bogus", ""},
      {R"({"model":"x"})", "messages", ""},
      {R"({"messages":[{"role":"wizard","content":"x"}]})", "messages[0].role", ""},
  };
  for (const auto& c : cases) {
    const ApiError e = errorOf(c.body);
    EXPECT_EQ(e.status(), 400) << c.body;
    EXPECT_EQ(e.param(), c.param) << c.body << " -> " << e.what();
    EXPECT_EQ(e.code(), c.code) << c.body;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(GenerationRequest, SamplersPenaltiesAndLogprobsAreRead) {
  auto r = parseChatCompletionRequest("{" + kUser + R"(,"presence_penalty":0.5,"frequency_penalty":-1,"repetition_penalty":1.3,"min_p":0.05,"logit_bias":{"7":-100,"3":2.5,"7":-50},"logprobs":true,"top_logprobs":4,"top_k":-1})", limits());
  EXPECT_FLOAT_EQ(r.params.processing.presencePenalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.processing.frequencyPenalty, -1.0f);
  EXPECT_FLOAT_EQ(r.params.processing.repetitionPenalty, 1.3f);
  EXPECT_FLOAT_EQ(r.params.sampling.minP, 0.05f);
  EXPECT_EQ(r.params.sampling.topK, 0);  // -1: off
  const std::vector<std::pair<int32_t, float>> bias = {{3, 2.5f}, {7, -50.0f}};  // sorted; a repeated id: the last
  EXPECT_EQ(r.params.processing.logitBias, bias);
  EXPECT_TRUE(r.params.logprobs);
  EXPECT_EQ(r.params.topLogprobs, 4u);
  r = parseChatCompletionRequest("{" + kUser + R"(,"logprobs":false,"cache_prompt":true,"ignore_eos":false,"min_tokens":0,"include_stop_str_in_output":false,"use_beam_search":false,"length_penalty":1.0})", limits());
  EXPECT_FALSE(r.params.logprobs);
  EXPECT_FALSE(r.params.processing.active());
  auto c = parseCompletionRequest(R"({"prompt":"x","logprobs":0})", limits());
  EXPECT_TRUE(c.params.logprobs);
  EXPECT_EQ(c.params.topLogprobs, 0u);
  c = parseCompletionRequest(R"({"prompt":"x","logprobs":5})", limits());
  EXPECT_EQ(c.params.topLogprobs, 5u);
  EXPECT_EQ(errorOf(R"({"prompt":"x","logprobs":true})", false).param(), "logprobs");
  EXPECT_EQ(errorOf(R"({"prompt":"x","logprobs":21})", false).param(), "logprobs");
}

TEST(GenerationRequest, JsonDepthAndValidity) {
  EXPECT_NE(std::string(errorOf("{" + kUser + R"(,"metadata":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]})").what()).find("nested"),
            std::string::npos);
  EXPECT_NE(std::string(errorOf("{\"messages\":[").what()).find("not valid JSON"), std::string::npos);
  EXPECT_NE(std::string(errorOf("[]").what()).find("object"), std::string::npos);
}

TEST(GenerationRequest, CompletionPrompts) {
  auto r = parseCompletionRequest(R"({"prompt":"abc","max_tokens":3})", limits());
  EXPECT_FALSE(r.promptIsIds);
  EXPECT_EQ(r.promptText, "abc");
  r = parseCompletionRequest(R"({"prompt":[1,2,3]})", limits());
  EXPECT_TRUE(r.promptIsIds);
  EXPECT_EQ(r.promptIds, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(errorOf(R"({"prompt":["a"]})", false).param(), "prompt");
  EXPECT_EQ(errorOf(R"({"prompt":[-1]})", false).param(), "prompt");
  EXPECT_EQ(errorOf(R"({"prompt":[]})", false).param(), "prompt");
  EXPECT_EQ(errorOf(R"({"prompt":"x","echo":true})", false).param(), "echo");
  EXPECT_EQ(errorOf(R"({"max_tokens":2})", false).param(), "prompt");
}

TEST(ApiErrorEnvelope, OpenAiShape) {
  EXPECT_EQ(errorEnvelope(ApiError(400, "invalid_request_error", "n", "unsupported_parameter", "no \"n\"")),
            R"({"error":{"message":"no \"n\"","type":"invalid_request_error","param":"n","code":"unsupported_parameter"}})");
  EXPECT_EQ(errorEnvelope(429, "busy"), R"({"error":{"message":"busy","type":"rate_limit_error","param":null,"code":null}})");
}

}  // namespace
