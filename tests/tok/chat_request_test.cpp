// The chat-completions request reader: what each field becomes, the effort
// map, the legacy form, and a table of bad requests with the one-line error
// each must get (naming the field).
#include "k3/tok/chat_request.h"

#include <gtest/gtest.h>

#include "k3/io/error.h"

namespace {

using k3::tok::ChatRequest;
using k3::tok::ThinkingEffort;

ChatRequest read(const std::string& json, bool developerAsSystem = false) {
  return k3::tok::parseChatRequest(json, "req.json", {.developerAsSystem = developerAsSystem});
}

const std::string kHi = R"("messages": [{"role": "user", "content": "Hi"}])";

TEST(TokChatRequest, MessagesAndFields) {
  const auto r = read(R"({"model": "m", "temperature": 0.3, "stream": true, "messages": [
      {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "name": "n"},
      {"role": "user", "content": null},
      {"role": "assistant", "content": "c", "reasoning": "r", "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "f", "arguments": {"b": 1E5, "a": [123456789012345678901, -0]}}}]},
      {"role": "tool", "tool_call_id": "x", "content": "out"}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].content, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.messages[0].name, "n");
  EXPECT_TRUE(r.messages[1].content.empty());
  EXPECT_EQ(r.messages[2].reasoning, "r");
  ASSERT_EQ(r.messages[2].toolCalls.size(), 1u);
  // An object given directly: members and literals as written (compact).
  EXPECT_EQ(r.messages[2].toolCalls[0].arguments, R"({"b":1E5,"a":[123456789012345678901,0]})");
  EXPECT_EQ(r.messages[3].toolCallId, "x");
  EXPECT_TRUE(r.addGenerationPrompt);
  EXPECT_TRUE(r.thinking);
  EXPECT_EQ(r.effort, ThinkingEffort::Max);  // HF apply_chat_template default
}

TEST(TokChatRequest, ThinkingAndEffortMap) {
  struct Case {
    std::string options;
    bool thinking;
    ThinkingEffort effort;
  };
  const Case cases[] = {
      {"", true, ThinkingEffort::Max},
      {R"("chat_template_kwargs": {"thinking": false})", false, ThinkingEffort::None},
      {R"("chat_template_kwargs": {"thinking_effort": "low"})", true, ThinkingEffort::Low},
      {R"("chat_template_kwargs": {"thinking": true, "thinking_effort": "high"})", true, ThinkingEffort::High},
      {R"("chat_template_kwargs": {"thinking_effort": null})", true, ThinkingEffort::None},
      {R"("reasoning_effort": "none")", false, ThinkingEffort::None},
      {R"("reasoning_effort": "minimal")", true, ThinkingEffort::Low},
      {R"("reasoning_effort": "low")", true, ThinkingEffort::Low},
      {R"("reasoning_effort": "medium")", true, ThinkingEffort::High},
      {R"("reasoning_effort": "high")", true, ThinkingEffort::High},
      {R"("reasoning_effort": "xhigh")", true, ThinkingEffort::Max},
      {R"("thinking": true)", true, ThinkingEffort::None},  // legacy: the encoder called directly
      {R"("thinking": false)", false, ThinkingEffort::None},
      {R"("thinking": true, "chat_template_kwargs": {"thinking_effort": "max"})", true, ThinkingEffort::Max},
  };
  for (const Case& c : cases) {
    const auto r = read("{" + kHi + (c.options.empty() ? "" : ", " + c.options) + "}");
    EXPECT_EQ(r.thinking, c.thinking) << c.options;
    EXPECT_EQ(r.effort, c.effort) << c.options;
  }
}

TEST(TokChatRequest, DeveloperOnlyWhenMapped) {
  const std::string json = R"({"messages": [{"role": "developer", "content": "d"}]})";
  EXPECT_EQ(read(json, true).messages[0].role, "system");
  EXPECT_THROW(read(json, false), k3::Error);
}

TEST(TokChatRequest, ToolChoiceAndResponseFormat) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  auto r = read("{" + kHi + ", " + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})");
  EXPECT_EQ(r.toolChoice, k3::tok::ToolChoice::Named);
  EXPECT_EQ(r.toolChoiceName, "f");
  EXPECT_EQ(r.toolsJson, R"([{"function":{"name":"f"},"type":"function"}])");
  r = read("{" + kHi + R"(, "tool_choice": "required", "response_format": {"type": "json_object"}})");
  EXPECT_EQ(r.toolChoice, k3::tok::ToolChoice::Required);
  EXPECT_EQ(r.responseFormat.kind, k3::tok::ResponseFormat::Kind::JsonObject);
}

// Each bad request and the text its one-line error must contain.
TEST(TokChatRequest, ErrorTable) {
  const std::pair<std::string, std::string> table[] = {
      {"{", "req.json: not valid JSON"},
      {"[1]", "req.json: request: expected an object, got array"},
      {"{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", "req.json: not valid JSON"},
      {"{}", "req.json: messages: missing"},
      {R"({"messages": {}})", "messages: expected an array, got object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role: missing"},
      {R"({"messages": [{"role": "wizard"}]})", "messages[0].role: unknown role 'wizard'"},
      {R"({"messages": [{"role": "user", "content": 5}]})",
       "messages[0].content: expected a string, null or a list of text parts, got integer"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type: 'image_url' is not supported (text parts only)"},
      {R"({"messages": [{"role": "user", "content": "x", "audio": {}}]})", "messages[0].audio: unknown message field"},
      {R"({"messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "y", "reasoning_content": "r"}]})",
       "messages[1].reasoning_content: only an assistant has reasoning"},
      {R"({"messages": [{"role": "assistant", "reasoning_content": "a", "reasoning": "b"}]})",
       "messages[0].reasoning: differs from reasoning_content"},
      {R"({"messages": [{"role": "user", "tool_calls": [{"function": {"name": "f"}}]}]})",
       "messages[0].tool_calls: only an assistant makes tool calls"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})",
       "messages[0].tool_calls[0].function.name: missing or empty"},
      {R"({"messages": [{"role": "x"}, {"role": "x"}, {"role": "x"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]})",
       "messages[0].role: unknown role"},
      {R"({"messages": [{"role": "user"}, {"role": "user"}, {"role": "user"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]})",
       "messages[3].tool_calls[0].function.arguments: JSON but not an object (array)"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "7"}}]}]})",
       "messages[0].tool_calls[0].function.arguments: JSON but not an object (integer)"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 7}}]}]})",
       "messages[0].tool_calls[0].function.arguments: expected a string, got integer"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "code", "function": {"name": "f"}}]}]})",
       "messages[0].tool_calls[0].type: 'code' is not supported"},
      {R"({"messages": [{"role": "user", "tool_call_id": "c"}]})", "messages[0].tool_call_id: only a tool result"},
      {R"({"messages": [{"role": "user", "tools": [{"function": {"name": "f"}}]}]})",
       "messages[0].tools: only a system message declares tools"},
      {R"({"messages": [], "tools": [{"type": "function"}]})", "tools[0].function: missing"},
      {R"({"messages": [], "tools": [{"function": {"name": ""}}]})", "tools[0].function.name: missing or empty"},
      {R"({"messages": [], "tools": {}})", "tools: expected an array, got object"},
      {R"({"messages": [], "tool_choice": "sometimes"})", "tool_choice: 'sometimes' is not auto, none, required"},
      {R"({"messages": [], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice.function.name: 'g' is not a declared tool"},
      {R"({"messages": [], "response_format": {"type": "yaml"}})", "response_format.type: 'yaml' is not text"},
      {R"({"messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})",
       "response_format.json_schema.schema: missing"},
      {R"({"messages": [], "chat_template_kwargs": {"thinking_effort": "medium"}})",
       "chat_template_kwargs.thinking_effort: 'medium' is advertised"},
      {R"({"messages": [], "chat_template_kwargs": {"thinking_effort": "huge"}})",
       "chat_template_kwargs.thinking_effort: 'huge' is not low, high, max or null"},
      {R"({"messages": [], "chat_template_kwargs": {"thinking": "yes"}})",
       "chat_template_kwargs.thinking: expected a boolean, got string"},
      {R"({"messages": [], "chat_template_kwargs": {"enable_thinking": true}})",
       "chat_template_kwargs.enable_thinking: unknown template option"},
      {R"({"messages": [], "chat_template_kwargs": {"thinking": false, "thinking_effort": "low"}})",
       "chat_template_kwargs.thinking_effort: an effort is set but thinking is off"},
      {R"({"messages": [], "reasoning_effort": "extreme"})", "reasoning_effort: 'extreme' is not none, minimal"},
      {R"({"messages": [], "reasoning_effort": "low", "chat_template_kwargs": {"thinking_effort": "low"}})",
       "reasoning_effort: set together with chat_template_kwargs.thinking_effort"},
      {R"({"messages": [], "reasoning_effort": "none", "chat_template_kwargs": {"thinking": true}})",
       "reasoning_effort: 'none' turns thinking off"},
      {R"({"messages": [], "thinking": true, "chat_template_kwargs": {"thinking": true}})",
       "chat_template_kwargs.thinking: set both here and as top-level"},
      {R"({"messages": [], "add_generation_prompt": 1})", "add_generation_prompt: expected a boolean, got integer"},
      {R"({"messages": [], "functions": [{"name": "f"}]})", "functions: the deprecated function-calling fields"},
      {R"({"messages": [], "continue_final_message": true})", "continue_final_message: not supported"},
  };
  for (const auto& [json, want] : table) {
    try {
      read(json);
      ADD_FAILURE() << "accepted: " << json;
    } catch (const k3::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(want), std::string::npos) << json << "\n  got: " << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind("req.json: ", 0), 0u) << msg;
    }
  }
}

}  // namespace
