// The XTML chat encoder on the real Kimi vocabulary: the frozen official ids
// of spec §7.6, segment-level rules (attributes, escaping, channels, typed
// arguments, tool-result order), the assistant body the parser reads, and
// errors. The 2,400-request comparison with an independent renderer is
// chat_encoder_ref_test.py; the plain layout against tiktoken, chat_test.mjs.
#include "k3/tok/chat_encoder.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "k3/io/error.h"
#include "k3/tok/chat_request.h"
#include "support/test_env.h"
#include "tok_test_util.h"

namespace {

using k3::tok::ChatMessage;
using k3::tok::ChatRequest;
using k3::tok::Tokenizer;
using Ids = std::vector<uint32_t>;

const Tokenizer& kimi() {
  static const Tokenizer tok = Tokenizer::fromFiles(k3test::kimiDataDir() + "/tiktoken.model",
                                                     k3test::kimiDataDir() + "/k3_added_tokens.reconstructed.json");
  return tok;
}

ChatMessage message(const char* role, std::vector<std::string> content, std::string reasoning = "") {
  ChatMessage m;
  m.role = role;
  m.content = std::move(content);
  m.reasoning = std::move(reasoning);
  return m;
}

ChatRequest request(std::vector<ChatMessage> messages, bool thinking) {
  ChatRequest r;
  r.messages = std::move(messages);
  r.thinking = thinking;
  r.effort = k3::tok::ThinkingEffort::None;
  return r;
}

ChatRequest fromJson(const std::string& json) { return k3::tok::parseChatRequest(json, "test"); }

std::vector<std::string> texts(const k3::tok::RenderedChat& r) {
  std::vector<std::string> out;
  for (const auto& s : r.segments) out.push_back(s.special ? "#" + s.text : s.text);
  return out;
}

std::string joined(const k3::tok::RenderedChat& r) {
  std::string out;
  for (const auto& s : r.segments) out += (s.special ? "#" + s.text : s.text) + "|";
  return out;
}

// Spec 7.6, "Frozen official ids": user "Hi", no effort turn, generation prompt.
TEST(TokChatEncoder, FrozenOfficialIds) {
  const Ids on = {163587, 2778, 6244, 878,   2482, 1,      163589, 18699,  163588, 2778,  163589,
                  163586, 163587, 2778, 6244, 878, 69702, 1,      163589, 163587, 39964, 163589};
  Ids off = on;
  off[off.size() - 2] = 12092;  // … 163587 12092 163589
  EXPECT_EQ(k3::tok::renderChat(kimi(), request({message("user", {"Hi"})}, true)).ids, on);
  EXPECT_EQ(k3::tok::renderChat(kimi(), request({message("user", {"Hi"})}, false)).ids, off);
  // Through the request reader: no effort turn asked for.
  EXPECT_EQ(k3::tok::renderChat(kimi(), fromJson(R"({"messages": [{"role": "user", "content": "Hi"}],
      "chat_template_kwargs": {"thinking_effort": null}})")).ids, on);
  EXPECT_EQ(k3::tok::renderChat(kimi(), fromJson(R"({"messages": [{"role": "user", "content": "Hi"}],
      "reasoning_effort": "none"})")).ids, off);
}

TEST(TokChatEncoder, SingleTokensOfTheSpec) {
  const std::pair<const char*, uint32_t> single[] = {{"message", 2778}, {" role", 6244}, {"=\"", 878}, {"\"", 1},
                                                     {"user", 2482},    {"assistant", 69702}, {"system", 14062},
                                                     {"think", 39964},  {"response", 12092},  {"tools", 25385},
                                                     {"call", 10257},   {"argument", 47185}};
  for (auto [text, id] : single) EXPECT_EQ(kimi().encode(text), Ids{id}) << text;
}

TEST(TokChatEncoder, PastAssistantTurnsKeepAnEmptyThinkChannel) {
  const Ids want = {163587, 2778,   6244,   878,    69702,  1,      163589, 163587, 39964,  163589, 163588, 39964,
                    163589, 163587, 12092,  163589, 18699,  163588, 12092,  163589, 163588, 2778,   163589, 163586,
                    163587, 2778,   6244,   878,    69702,  1,      163589, 163587, 39964,  163589};
  EXPECT_EQ(k3::tok::renderChat(kimi(), request({message("assistant", {"Hi"})}, true)).ids, want);
}

TEST(TokChatEncoder, DefaultRequestCarriesTheMaxEffortTurn) {
  const auto r = k3::tok::renderChat(kimi(), fromJson(R"({"messages": [{"role": "user", "content": "Hi"}]})"));
  const auto t = texts(r);
  ASSERT_GE(t.size(), 12u);
  EXPECT_EQ(std::vector<std::string>(t.begin(), t.begin() + 11),
            (std::vector<std::string>{"#<|open|>", "message", " role", "=\"", "system", "\"", " type", "=\"",
                                      "thinking-effort", "\"", "#<|sep|>"}));
  EXPECT_NE(t[11].find("Now the system is invoked with `thinking_effort=max`."), std::string::npos) << t[11];
  EXPECT_EQ(t[11].back(), '.');  // stripped
}

TEST(TokChatEncoder, AttributesAreEscapedBodiesNever) {
  ChatMessage u = message("user", {"a & \"b\" <|open|>", "second part"});
  u.name = "Bob & \"Co\"";
  const auto r = k3::tok::renderChat(kimi(), request({u}, false));
  EXPECT_EQ(joined(r),
            "#<|open|>|message| role|=\"|user|\"| name|=\"|Bob &amp; &quot;Co&quot;|\"|#<|sep|>|a & \"b\" <|open|>|"
            "second part|#<|close|>|message|#<|sep|>|#<|end_of_msg|>|#<|open|>|message| role|=\"|assistant|\"|"
            "#<|sep|>|#<|open|>|response|#<|sep|>|");
  // The literal marker is text: exactly the specials the structure needs.
  size_t opens = 0;
  for (uint32_t id : r.ids) opens += id == 163587;
  EXPECT_EQ(opens, 3u);
}

TEST(TokChatEncoder, CallsWithTypedArgumentsAndOrderedResults) {
  const auto req = fromJson(R"({"messages": [
      {"role": "user", "content": "go"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments":
          "{\"flag\": true, \"n\": 1e16, \"s\": \"ü\\\"q\", \"o\": {\"k\": [1, 2.50, null]}, \"x\": null, \"big\": 123456789012345678901}"}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}},
        {"id": "c3", "type": "function", "function": {"name": "h", "arguments": ""}}]},
      {"role": "tool", "tool_call_id": "c3", "content": "r3"},
      {"role": "tool", "tool_call_id": "c1", "content": "r1"},
      {"role": "tool", "tool_call_id": "zz", "name": "named", "content": "rz"},
      {"role": "tool", "tool_call_id": "c2", "name": "ignored", "content": "r2"}],
    "add_generation_prompt": false, "chat_template_kwargs": {"thinking": false}})");
  const std::string s = joined(k3::tok::renderChat(kimi(), req));
  const std::string calls =
      "#<|open|>|tools|#<|sep|>|"
      "#<|open|>|call| tool|=\"|f|\"| index|=\"|1|\"|#<|sep|>|"
      "#<|open|>|argument| key|=\"|flag|\"| type|=\"|boolean|\"|#<|sep|>|true|#<|close|>|argument|#<|sep|>|"
      "#<|open|>|argument| key|=\"|n|\"| type|=\"|number|\"|#<|sep|>|1e+16|#<|close|>|argument|#<|sep|>|"
      "#<|open|>|argument| key|=\"|s|\"| type|=\"|string|\"|#<|sep|>|ü\"q|#<|close|>|argument|#<|sep|>|"
      "#<|open|>|argument| key|=\"|o|\"| type|=\"|object|\"|#<|sep|>|{\"k\": [1, 2.5, null]}|#<|close|>|argument|#<|sep|>|"
      "#<|open|>|argument| key|=\"|x|\"| type|=\"|null|\"|#<|sep|>|null|#<|close|>|argument|#<|sep|>|"
      "#<|open|>|argument| key|=\"|big|\"| type|=\"|number|\"|#<|sep|>|123456789012345678901|#<|close|>|argument|#<|sep|>|"
      "#<|close|>|call|#<|sep|>|"
      "#<|open|>|call| tool|=\"|g|\"| index|=\"|2|\"|#<|sep|>|"
      "#<|open|>|json| type|=\"|object|\"|#<|sep|>|not json|#<|close|>|json|#<|sep|>|#<|close|>|call|#<|sep|>|"
      "#<|open|>|call| tool|=\"|h|\"| index|=\"|3|\"|#<|sep|>|#<|close|>|call|#<|sep|>|"
      "#<|close|>|tools|#<|sep|>|";
  EXPECT_NE(s.find("#<|open|>|response|#<|sep|>|#<|close|>|response|#<|sep|>|" + calls), std::string::npos) << s;
  // Results in call order c1, c2, c3 (matched name wins), then the unmatched named one; i = 1, 2, ….
  const std::string results =
      "#<|open|>|message| role|=\"|tool|\"| tool|=\"|f|\"| index|=\"|1|\"|#<|sep|>|r1|#<|close|>|message|#<|sep|>|#<|end_of_msg|>|"
      "#<|open|>|message| role|=\"|tool|\"| tool|=\"|g|\"| index|=\"|2|\"|#<|sep|>|r2|#<|close|>|message|#<|sep|>|#<|end_of_msg|>|"
      "#<|open|>|message| role|=\"|tool|\"| tool|=\"|h|\"| index|=\"|3|\"|#<|sep|>|r3|#<|close|>|message|#<|sep|>|#<|end_of_msg|>|"
      "#<|open|>|message| role|=\"|tool|\"| tool|=\"|named|\"| index|=\"|4|\"|#<|sep|>|rz|#<|close|>|message|#<|sep|>|#<|end_of_msg|>|";
  EXPECT_NE(s.find(results), std::string::npos) << s;
  EXPECT_EQ(s.substr(s.size() - results.size()), results);  // no generation prompt
}

TEST(TokChatEncoder, DeclarationsChoiceAndFormatTurns) {
  const auto req = fromJson(R"({"messages": [
      {"role": "system", "content": "dropped", "name": "loader",
       "tools": [{"type": "function", "function": {"name": "late", "parameters": {"type": "object",
                  "properties": {"q": {"type": "string"}, "n": {"type": ["integer", "null"]}}}}}]},
      {"role": "user", "content": "x"}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "é", "parameters": {"type": "object", "properties": {"b": {"type": "boolean"}}}}}],
    "tool_choice": "none",
    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"z": 1.0, "a": [3, 1]}}},
    "add_generation_prompt": false, "chat_template_kwargs": {"thinking_effort": "low"}})");
  ASSERT_EQ(req.tools.size(), 2u);
  EXPECT_EQ(req.tools[0].name, "f");
  EXPECT_EQ(req.tools[0].params, (std::vector<std::pair<std::string, std::string>>{{"b", "boolean"}}));
  EXPECT_EQ(req.tools[1].name, "late");
  EXPECT_EQ(req.tools[1].params, (std::vector<std::pair<std::string, std::string>>{{"q", "string"}, {"n", ""}}));
  const auto t = texts(k3::tok::renderChat(kimi(), req));
  const std::string fence = "```";
  const std::vector<std::string> want = {
      "#<|open|>", "message", " role", "=\"", "system", "\"", " type", "=\"", "tool-declare", "\"", "#<|sep|>",
      "# Tools\nHere are the available tools, described in JSONSchema.\n\n" + fence +
          "json\n[{\"function\":{\"description\":\"é\",\"name\":\"f\",\"parameters\":{\"properties\":{\"b\":{\"type\":"
          "\"boolean\"}},\"type\":\"object\"}},\"type\":\"function\"}]\n" + fence,
      "#<|close|>", "message", "#<|sep|>", "#<|end_of_msg|>",
      "#<|open|>", "message", " role", "=\"", "system", "\"", " type", "=\"", "thinking-effort", "\"", "#<|sep|>",
      "`thinking_effort` guides on how much to think in your thinking channel (not including the response channel), "
      "supported values include `low`, `medium`, `high`, and `max`.\nNow the system is invoked with `thinking_effort=low`.",
      "#<|close|>", "message", "#<|sep|>", "#<|end_of_msg|>",
      "#<|open|>", "message", " role", "=\"", "system", "\"", " name", "=\"", "loader", "\"", " type", "=\"", "tool-declare",
      "\"", "#<|sep|>",
      "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\nYou have access to all "
      "existing and extended tools.\nHere are the specs for the extended tools.\n\n" + fence +
          "json\n[{\"function\":{\"name\":\"late\",\"parameters\":{\"properties\":{\"n\":{\"type\":[\"integer\",\"null\"]},"
          "\"q\":{\"type\":\"string\"}},\"type\":\"object\"}},\"type\":\"function\"}]\n" + fence,
      "#<|close|>", "message", "#<|sep|>", "#<|end_of_msg|>",
      "#<|open|>", "message", " role", "=\"", "user", "\"", "#<|sep|>", "x", "#<|close|>", "message", "#<|sep|>",
      "#<|end_of_msg|>",
      "#<|open|>", "message", " role", "=\"", "system", "\"", " type", "=\"", "tool-choice", "\"", "#<|sep|>",
      "The system is invoked with `tool_choice=none`.\nYou MUST NOT call any tools in the next message.",
      "#<|close|>", "message", "#<|sep|>", "#<|end_of_msg|>",
      "#<|open|>", "message", " role", "=\"", "system", "\"", " type", "=\"", "response-format", "\"", "#<|sep|>",
      "The system is invoked with `response_format=json_schema`.\nYour response must be raw JSON data without markdown "
      "code blocks (```json) or any additional formatting.\nThe JSON data must match the following schema:\n" + fence +
          "json\n{\"a\":[3,1],\"z\":1.0}\n" + fence,
      "#<|close|>", "message", "#<|sep|>", "#<|end_of_msg|>"};
  EXPECT_EQ(t, want);
}

// What the model writes after the generation prompt is exactly what the
// encoder renders for that assistant turn in the history.
TEST(TokChatEncoder, AssistantBodyContinuesTheGenerationPrompt) {
  ChatMessage a = message("assistant", {"Sure: ", "done."}, "Think & \"plan\".");
  a.toolCalls = {{"c1", "f", R"({"a": 1.5, "b": "x"})"}, {"c2", "g", ""}, {"c3", "h", "raw text"}};
  for (bool thinking : {true, false}) {
    ChatRequest prompt = request({message("user", {"q"})}, thinking);
    ChatRequest whole = request({message("user", {"q"}), a}, thinking);
    whole.addGenerationPrompt = false;
    Ids want = k3::tok::renderChat(kimi(), prompt).ids;
    const Ids body = k3::tok::renderAssistantBody(kimi(), a, thinking).ids;
    want.insert(want.end(), body.begin(), body.end());
    EXPECT_EQ(k3::tok::renderChat(kimi(), whole).ids, want) << "thinking " << thinking;
    EXPECT_EQ(body.back(), 163586u);
  }
  const auto t = texts(k3::tok::renderAssistantBody(kimi(), message("assistant", {"hi"}, "r"), true));
  EXPECT_EQ(std::vector<std::string>(t.begin(), t.begin() + 7),
            (std::vector<std::string>{"r", "#<|close|>", "think", "#<|sep|>", "#<|open|>", "response", "#<|sep|>"}));
}

void expectUsageError(const ChatRequest& req, const std::string& what) {
  try {
    k3::tok::renderChat(kimi(), req);
    ADD_FAILURE() << "no error, expected " << what;
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(TokChatEncoder, Errors) {
  expectUsageError(request({message("developer", {"x"})}, true), "messages[0].role: unknown role 'developer'");
  ChatMessage tool = message("tool", {"r"});
  tool.toolCallId = "nope";
  expectUsageError(request({message("user", {"x"}), tool}, true),
                   "messages[1]: tool result: tool_call_id 'nope' matches no call");
  ChatMessage a = message("assistant", {""});
  a.toolCalls = {{"c", "f", "[1, 2]"}};
  expectUsageError(request({a}, true), "messages[0].tool_calls[0].function.arguments: JSON but not an object (array)");

  const std::string dir = k3test::freshDir("tok-chat-enc");
  k3test::writeFile(dir + "/tiktoken.model", k3test::tinyModelText({}));
  const Tokenizer reservedOnly = Tokenizer::fromDirectory(dir);
  try {
    k3::tok::renderChat(reservedOnly, request({message("user", {"x"})}, true));
    FAIL();
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Missing);
  }
}

}  // namespace

// renderChat with a token limit (the server's prompt cap): overLimit exactly
// when the whole rendering is longer; otherwise the same ids and segments.
TEST(TokChatEncoder, TokenLimitStopsRenderingOnceThePromptIsLonger) {
  const ChatRequest req = request({message("system", {"Be brief."}), message("user", {"Hello there, how are you?"}),
                                   message("assistant", {"Fine."}), message("user", {"Tell me more about it."})},
                                  true);
  const k3::tok::RenderedChat whole = k3::tok::renderChat(kimi(), req);
  ASSERT_GT(whole.ids.size(), 20u);
  for (size_t limit : {size_t{0}, size_t{5}, whole.ids.size() - 1, whole.ids.size(), whole.ids.size() + 10}) {
    const k3::tok::RenderedChat cut = k3::tok::renderChat(kimi(), req, limit);
    EXPECT_EQ(cut.overLimit, whole.ids.size() > limit) << limit;
    if (!cut.overLimit) {
      EXPECT_EQ(cut.ids, whole.ids);
      EXPECT_EQ(joined(cut), joined(whole));
    } else {
      ASSERT_LE(cut.ids.size(), whole.ids.size());
      EXPECT_TRUE(std::equal(cut.ids.begin(), cut.ids.end(), whole.ids.begin())) << "a prefix";
    }
  }
}
