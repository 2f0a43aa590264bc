// The OpenAI response bodies the server writes: chunks (content, reasoning,
// tool calls), the non-stream message assembled from deltas, usage.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "k3/serve/response_json.h"

namespace {

using namespace k3::serve;

OutputDelta delta(OutputDelta::Kind k, std::string text) {
  OutputDelta d;
  d.kind = k;
  d.text = std::move(text);
  return d;
}

OutputDelta toolDelta(int index, std::string id, std::string name, std::string args) {
  OutputDelta d = delta(OutputDelta::Kind::ToolCall, std::move(args));
  d.toolIndex = index;
  d.toolId = std::move(id);
  d.toolName = std::move(name);
  return d;
}

TEST(ResponseJson, ChunksAndUsage) {
  const ResponseMeta m{"chatcmpl-1", 7, "k3"};
  EXPECT_EQ(chatChunkJson(m, chatDeltaJson(delta(OutputDelta::Kind::Content, "hé")), ""),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"k3","choices":[{"index":0,"delta":{"content":"h\u00e9"},"logprobs":null,"finish_reason":null}]})");
  EXPECT_EQ(chatDeltaJson(delta(OutputDelta::Kind::Reasoning, "r")), R"({"reasoning_content":"r"})");
  EXPECT_EQ(chatDeltaJson(toolDelta(0, "call_1", "get_weather", R"({"city":"Paris"})")),
            R"({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]})");
  EXPECT_EQ(usageJson({10, 4, 3}),
            R"({"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}})");
  EXPECT_EQ(chatUsageChunkJson(m, {1, 0, 2}).find(R"("choices":[],"usage":)") != std::string::npos, true);
  EXPECT_EQ(sseEvent("{}"), "data: {}\n\n");
}

TEST(ResponseJson, NonStreamMessageFromDeltas) {
  k3::tok::ChatMessage msg;
  addDelta(msg, delta(OutputDelta::Kind::Reasoning, "think "));
  addDelta(msg, delta(OutputDelta::Kind::Reasoning, "more"));
  addDelta(msg, delta(OutputDelta::Kind::Content, "an"));
  addDelta(msg, delta(OutputDelta::Kind::Content, "swer"));
  addDelta(msg, toolDelta(1, "call_2", "f", "{}"));
  EXPECT_EQ(contentOf(msg), "answer");
  EXPECT_EQ(msg.reasoning, "think more");
  ASSERT_EQ(msg.toolCalls.size(), 2u);
  EXPECT_EQ(msg.toolCalls[1].name, "f");
  const std::string j = chatCompletionJson({"c", 1, "k3"}, msg, "tool_calls", {5, 0, 6});
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_FALSE(parser.parse(j).get(root)) << j;
  auto str = [&](const char* pointer) { return std::string(std::string_view(root.at_pointer(pointer).get_string())); };
  EXPECT_EQ(str("/object"), "chat.completion");
  EXPECT_EQ(str("/choices/0/message/role"), "assistant");
  EXPECT_EQ(str("/choices/0/message/content"), "answer");
  EXPECT_EQ(str("/choices/0/message/reasoning_content"), "think more");
  EXPECT_EQ(str("/choices/0/message/tool_calls/1/function/name"), "f");
  EXPECT_EQ(str("/choices/0/message/tool_calls/1/id"), "call_2");
  EXPECT_EQ(str("/choices/0/finish_reason"), "tool_calls");
  EXPECT_EQ(int64_t(root.at_pointer("/usage/total_tokens").get_int64()), 11);
}

}  // namespace
