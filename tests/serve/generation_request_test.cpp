// The server's part of the request schema: defaults, clamps, the fields it
// refuses (400, naming the field), and the conversation handed to the tok
// reader with developer read as system.
#include <gtest/gtest.h>

#include "k3/serve/api_error.h"
#include "k3/serve/generation_request.h"

namespace {

using namespace k3::serve;

RequestLimits limits() { return {100, 16, 4}; }

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
      {"{" + kUser + R"(,"logprobs":true})", "logprobs", "unsupported_parameter"},
      {"{" + kUser + R"(,"frequency_penalty":1})", "frequency_penalty", "unsupported_parameter"},
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
