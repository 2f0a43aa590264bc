// The output parser on well-formed model output with the real Kimi
// vocabulary: streaming behaviour (held-back partial characters, calls only
// at CLOSE(call), text that looks like markers) and the round trip
// parse(ids of M) == M over generated assistant messages, with the ids built
// from spec §7.6 by the test's own XtmlIds and checked equal to the encoder's
// renderAssistantBody(M).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "k3/io/json_text.h"
#include "k3/tok/chat_encoder.h"
#include "k3/tok/id_text.h"
#include "tok/chat_output_test_util.h"

namespace {

using k3::tok::ChatMessage;
using k3::tok::ChatOutputEvent;
using k3::tok::ChatOutputParser;
using k3::tok::ToolCall;
using k3::tok::ToolSpec;
using k3test::XtmlIds;

bool isValidUtf8(const std::string& s) { return k3::tok::toValidUtf8(s) == s; }

std::string textOf(const std::vector<ChatOutputEvent>& events, ChatOutputEvent::Kind kind) {
  std::string out;
  for (const auto& e : events)
    if (e.kind == kind) out += e.text;
  return out;
}

// Characters the Kimi vocabulary has no single token for, so BPE splits them
// inside their UTF-8 bytes (rare CJK, emoji).
std::vector<std::string> splitCharacters(const k3::tok::Tokenizer& tok) {
  std::vector<std::string> found;
  for (const char* c : {"\xF0\xA0\x9C\x8E", "\xF0\xAA\x9A\xA5", "\xE9\xBE\x98", "\xF0\x9F\xA6\x9C", "\xF0\x9F\xAB\xA0",
                        "\xF0\x9D\x95\x8F", "\xE4\xB6\xB5", "\xF0\x9F\xA7\x8C"}) {
    std::vector<uint32_t> ids = tok.encode(c);
    for (size_t k = 1; k < ids.size(); ++k)
      if (!isValidUtf8(tok.decode(std::span(ids).first(k)))) {
        found.emplace_back(c);
        break;
      }
  }
  return found;
}

TEST(ChatOutputParser, EventsNeverCarryAPartialCharacter) {
  const auto& tok = k3test::kimiTokenizer();
  const std::vector<std::string> chars = splitCharacters(tok);
  ASSERT_GE(chars.size(), 2u) << "the real vocabulary should split some rare characters";
  std::string reasoning = "r" + chars[0] + chars[1] + "x" + chars[0];
  std::string content = chars[1] + " and " + chars[0];
  XtmlIds b(tok);
  b.text(reasoning).close("think").open("response").text(content).close("response").end();

  ChatOutputParser parser(tok, {}, true);
  std::vector<ChatOutputEvent> events;
  size_t silentTextTokens = 0;
  for (uint32_t id : b.ids) {
    const size_t before = events.size();
    parser.feed(id, events);
    for (size_t i = before; i < events.size(); ++i) {
      EXPECT_TRUE(isValidUtf8(events[i].text)) << "partial character emitted at token " << parser.position();
      if (events[i].kind == ChatOutputEvent::Kind::Reasoning || events[i].kind == ChatOutputEvent::Kind::Content) {
        EXPECT_FALSE(events[i].text.empty());
      }
    }
    if (events.size() == before && !tok.isSpecial(id) && parser.position() <= 8) ++silentTextTokens;
  }
  EXPECT_GT(silentTextTokens, 0u) << "a token ending inside a character must be held back";
  EXPECT_EQ(textOf(events, ChatOutputEvent::Kind::Reasoning), reasoning);
  EXPECT_EQ(textOf(events, ChatOutputEvent::Kind::Content), content);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, ChatOutputEvent::Kind::Done);
}

TEST(ChatOutputParser, FinishTurnsAnUnfinishedCharacterIntoAReplacement) {
  const auto& tok = k3test::kimiTokenizer();
  const std::vector<std::string> chars = splitCharacters(tok);
  ASSERT_FALSE(chars.empty());
  std::vector<uint32_t> charIds = tok.encode(chars[0]);
  XtmlIds b(tok);
  b.close("think").open("response").text("ok ");
  b.ids.push_back(charIds[0]);  // generation cut inside the character
  auto r = k3test::parseOutput(tok, b.ids, {}, true);
  EXPECT_FALSE(r.end.complete);
  EXPECT_EQ(r.end.state, "in the response");
  ASSERT_EQ(r.message.content.size(), 1u);
  EXPECT_EQ(r.message.content[0], k3::tok::toValidUtf8("ok " + tok.tokenBytes(charIds[0])));
  EXPECT_EQ(r.finishReason, "length");
}

TEST(ChatOutputParser, MarkerLookingTextStaysText) {
  const auto& tok = k3test::kimiTokenizer();
  const std::string content = "say <|open|>call tool=\"x\"<|sep|> then <|close|>response<|sep|><|end_of_msg|>";
  XtmlIds b(tok);
  b.text("think <|close|>think<|sep|>").close("think").open("response").text(content).close("response").end();
  auto r = k3test::parseOutput(tok, b.ids, {}, true);
  ASSERT_FALSE(r.error) << r.error->message();
  EXPECT_EQ(r.message.reasoning, "think <|close|>think<|sep|>");
  ASSERT_EQ(r.message.content.size(), 1u);
  EXPECT_EQ(r.message.content[0], content);
  EXPECT_EQ(r.finishReason, "stop");
}

TEST(ChatOutputParser, RepeatedLeadingOpenThinkIsTolerated) {
  const auto& tok = k3test::kimiTokenizer();
  XtmlIds b(tok);
  b.open("think").text("why").close("think").open("response").text("because").close("response").end();
  auto r = k3test::parseOutput(tok, b.ids, {}, true);
  ASSERT_FALSE(r.error) << r.error->message();
  EXPECT_EQ(r.message.reasoning, "why");
  EXPECT_EQ(r.message.content, std::vector<std::string>{"because"});
  EXPECT_TRUE(r.end.complete);
}

TEST(ChatOutputParser, WithoutThinkingTheOutputStartsInTheResponse) {
  const auto& tok = k3test::kimiTokenizer();
  XtmlIds b(tok);
  b.text("plain answer").close("response").end();
  auto r = k3test::parseOutput(tok, b.ids, {}, false);
  ASSERT_FALSE(r.error) << r.error->message();
  EXPECT_EQ(r.message.reasoning, "");
  EXPECT_EQ(r.message.content, std::vector<std::string>{"plain answer"});
  EXPECT_EQ(r.finishReason, "stop");
}

TEST(ChatOutputParser, EndOfMessageAloneEndsTheMessage) {
  const auto& tok = k3test::kimiTokenizer();
  XtmlIds b(tok);
  b.text("r").close("think").open("response").text("short").endOfMessage();
  auto r = k3test::parseOutput(tok, b.ids, {}, true);
  ASSERT_FALSE(r.error) << r.error->message();
  EXPECT_TRUE(r.end.complete);
  EXPECT_EQ(r.message.content, std::vector<std::string>{"short"});
  EXPECT_EQ(r.finishReason, "stop");
}

TEST(ChatOutputParser, ACallIsEmittedExactlyAtItsClose) {
  const auto& tok = k3test::kimiTokenizer();
  std::vector<ToolSpec> tools = {{"get_weather", {{"city", "string"}, {"days", "integer"}}}};
  XtmlIds b(tok);
  b.close("think").open("response").close("response").open("tools");
  b.open("call", {{"tool", "get_weather"}, {"index", "1"}});
  b.open("argument", {{"key", "city"}, {"type", "string"}}).text("São \"Paulo\"\n").close("argument");
  b.open("argument", {{"key", "days"}, {"type", "number"}}).text("3").close("argument");
  b.close("call");
  const size_t callEnd = b.size();  // the <|sep|> of CLOSE(call) is token callEnd - 1
  b.close("tools").end();

  ChatOutputParser parser(tok, tools, true, "call_abc_");
  std::vector<ChatOutputEvent> events;
  for (size_t i = 0; i < b.ids.size(); ++i) {
    parser.feed(b.ids[i], events);
    const bool haveCall = !events.empty() && std::any_of(events.begin(), events.end(), [](const auto& e) {
      return e.kind == ChatOutputEvent::Kind::ToolCall;
    });
    EXPECT_EQ(haveCall, i + 1 >= callEnd) << "token " << i;
  }
  auto call = std::find_if(events.begin(), events.end(), [](const auto& e) { return e.kind == ChatOutputEvent::Kind::ToolCall; });
  ASSERT_NE(call, events.end());
  EXPECT_EQ(call->index, 1);
  EXPECT_EQ(call->call.id, "call_abc_1");
  EXPECT_EQ(call->call.name, "get_weather");
  EXPECT_EQ(call->call.arguments, "{\"city\": \"São \\\"Paulo\\\"\\n\", \"days\": 3}");
  EXPECT_EQ(events.back().kind, ChatOutputEvent::Kind::Done);
}

// A value whose type differs from the declaration is the model's answer: the
// call carries it as written (value and type) and counts it; only a value
// that is not what its own type= says is malformed.
TEST(ChatOutputParser, MistypedArgumentsArePassedOnAsWrittenAndCounted) {
  const auto& tok = k3test::kimiTokenizer();
  std::vector<ToolSpec> tools = {{"get_weather", {{"city", "string"}, {"days", "integer"}, {"metric", "boolean"}}}};
  XtmlIds b(tok);
  b.close("think").open("response").close("response").open("tools");
  b.open("call", {{"tool", "get_weather"}, {"index", "1"}});
  b.open("argument", {{"key", "city"}, {"type", "array"}}).text("[\"Paris\", \"Lyon\"]").close("argument");
  b.open("argument", {{"key", "days"}, {"type", "number"}}).text("1.5").close("argument");
  b.open("argument", {{"key", "metric"}, {"type", "string"}}).text("yes").close("argument");
  b.close("call").close("tools").end();
  ChatOutputParser parser(tok, tools, true);
  std::vector<ChatOutputEvent> events;
  for (uint32_t id : b.ids) parser.feed(id, events);
  ASSERT_EQ(events.size(), 2u);
  ASSERT_EQ(events[0].kind, ChatOutputEvent::Kind::ToolCall) << events[0].error.message();
  EXPECT_EQ(events[0].call.arguments, "{\"city\": [\"Paris\", \"Lyon\"], \"days\": 1.5, \"metric\": \"yes\"}");
  EXPECT_EQ(events[0].mistyped, 3u);
  EXPECT_EQ(events[1].kind, ChatOutputEvent::Kind::Done);

  XtmlIds ok(tok);  // the same call as declared counts nothing
  ok.close("think").open("response").close("response").open("tools").open("call", {{"tool", "get_weather"}, {"index", "1"}});
  ok.open("argument", {{"key", "days"}, {"type", "number"}}).text("2").close("argument").close("call").close("tools").end();
  ChatOutputParser again(tok, tools, true);
  events.clear();
  for (uint32_t id : ok.ids) again.feed(id, events);
  ASSERT_EQ(events[0].kind, ChatOutputEvent::Kind::ToolCall);
  EXPECT_EQ(events[0].mistyped, 0u);
}

TEST(ChatOutputParser, AMovedParserFinishesThePendingCall) {
  const auto& tok = k3test::kimiTokenizer();
  std::vector<ToolSpec> tools = {{"get_weather", {{"city", "string"}}}};
  XtmlIds head(tok), tail(tok);
  head.close("think").open("response").close("response").open("tools").open("call", {{"tool", "get_weather"}, {"index", "1"}});
  head.open("argument", {{"key", "city"}, {"type", "string"}}).text("Par");
  tail.text("is").close("argument").close("call").close("tools").end();
  std::vector<ChatOutputParser> parsers;  // as a server keeps one per choice
  parsers.emplace_back(tok, std::span<const ToolSpec>(tools), true);
  std::vector<ChatOutputEvent> events;
  for (uint32_t id : head.ids) parsers[0].feed(id, events);
  tools.clear();                                                  // the parser keeps its own copy
  parsers.emplace_back(tok, std::span<const ToolSpec>(tools), true);  // may move parsers[0]
  for (uint32_t id : tail.ids) parsers[0].feed(id, events);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].call.arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(events[1].kind, ChatOutputEvent::Kind::Done);
}

TEST(ChatOutputParser, ARawJsonBlockIsTheArgumentsText) {
  const auto& tok = k3test::kimiTokenizer();
  std::vector<ToolSpec> tools = {{"run", {}}};
  XtmlIds b(tok);
  b.text("r").close("think").open("response").text("running").close("response").open("tools");
  b.open("call", {{"tool", "run"}, {"index", "1"}}).open("json", {{"type", "object"}}).text("ls -l | wc").close("json").close("call");
  b.open("call", {{"tool", "run"}, {"index", "2"}}).close("call");
  b.close("tools").end();
  auto r = k3test::parseOutput(tok, b.ids, tools, true);
  ASSERT_FALSE(r.error) << r.error->message();
  ASSERT_EQ(r.message.toolCalls.size(), 2u);
  EXPECT_EQ(r.message.toolCalls[0].arguments, "ls -l | wc");
  EXPECT_EQ(r.message.toolCalls[1].arguments, "{}");  // a call with no arguments
  EXPECT_EQ(r.message.toolCalls[1].id, "call_2");
  EXPECT_EQ(r.finishReason, "tool_calls");
}

TEST(ChatOutputParser, ChoiceJsonIsOpenAiShaped) {
  ChatMessage m;
  m.role = "assistant";
  m.reasoning = "hm";
  m.toolCalls.push_back({"call_1", "f", "{\"a\": \"é\"}"});
  EXPECT_EQ(k3::tok::assistantChoiceJson(m, "tool_calls"),
            "{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"hm\", "
            "\"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"f\", "
            "\"arguments\": \"{\\\"a\\\": \\\"é\\\"}\"}}]}, \"finish_reason\": \"tool_calls\"}");
  ChatMessage plain;
  plain.role = "assistant";
  EXPECT_EQ(k3::tok::assistantMessageJson(plain), "{\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": null}");
}

// ---- round trip over generated messages -----------------------------------

struct Gen {
  std::mt19937 rng;
  explicit Gen(uint32_t seed) : rng(seed) {}
  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng); }

  std::string text(size_t maxPieces) {
    static const char* pieces[] = {"Hello", " world", " wörld", "你好", "，", "日本語のテキスト", "🦜", "\xF0\xA0\x9C\x8E",
                                   "\"quoted\"", " a & b", "&amp;", "&quot;", "&lt;", "<|open|>", "<|close|>x<|sep|>",
                                   "<|end_of_msg|>", "\n", "  ", "\t", "1 < 2 > 0", "{\"json\": true}", "\\", "'", "=\"",
                                   "ü", "Ελληνικά", "😀😀", " ", "0.1"};
    std::string out;
    size_t n = below(maxPieces + 1);
    for (size_t i = 0; i < n; ++i) out += pieces[below(std::size(pieces))];
    return out;
  }
  std::string jsonString() {
    std::string out;
    k3::appendJsonStringUtf8(out, text(3));
    return out;
  }
  // A value as Python's json.dumps(v, ensure_ascii=False) writes it.
  std::string jsonValue(const std::string& type, int depth) {
    static const char* numbers[] = {"0",   "-1",   "42", "3.14", "1e+100", "-2.5e-08", "12345678901234",
                                    "0.1", "-0.0", "100000000000000000000000000000", "1.5e+300"};
    if (type == "number") return numbers[below(std::size(numbers))];
    if (type == "boolean") return chance(0.5) ? "true" : "false";
    if (type == "null") return "null";
    if (type == "string") return jsonString();
    static const char* inner[] = {"number", "boolean", "null", "string", "object", "array"};
    std::string out = type == "object" ? "{" : "[";
    size_t n = depth > 2 ? 0 : below(4);
    std::vector<std::string> keys;  // json.loads would merge a repeated key
    for (size_t i = 0; i < n; ++i) {
      if (i) out += ", ";
      if (type == "object") {
        std::string key;
        do key = jsonString(); while (std::find(keys.begin(), keys.end(), key) != keys.end());
        keys.push_back(key);
        out += key + ": ";
      }
      out += jsonValue(inner[below(std::size(inner))], depth + 1);
    }
    return out + (type == "object" ? "}" : "]");
  }
};

struct GenArg {
  std::string key, type, valueText;  // valueText: raw for strings, json.dumps text otherwise
};
struct GenCall {
  std::string tool;
  std::vector<GenArg> args;
  bool raw = false;
  std::string rawText;
};

std::vector<ToolSpec> genTools() {
  return {{"get_weather", {{"city", "string"}, {"days", "integer"}, {"units", "string"}}},
          {"search", {{"query", "string"}, {"limit", "number"}, {"exact", "boolean"}, {"filters", "object"},
                      {"tags", "array"}, {"cursor", "null"}, {"we\"ird & key", ""}}},
          {"say\"hi\"&co", {}}};
}

TEST(ChatOutputParser, RoundTripOverGeneratedMessages) {
  const auto& tok = k3test::kimiTokenizer();
  const std::vector<ToolSpec> tools = genTools();
  Gen g(20261201);
  const uint32_t open = *tok.specialId("<|open|>"), sep = *tok.specialId("<|sep|>");
  ASSERT_EQ(tok.encode("think").size(), 1u);
  const uint32_t thinkTag = tok.encode("think")[0];
  size_t withCalls = 0, withRaw = 0, emptyContentBeforeCalls = 0;
  for (int n = 0; n < 400; ++n) {
    SCOPED_TRACE("message " + std::to_string(n));
    const bool thinking = g.chance(0.7);
    ChatMessage want;
    want.role = "assistant";
    if (thinking) want.reasoning = g.text(6);
    std::string content = g.text(6);
    std::vector<GenCall> calls;
    if (g.chance(0.5)) {
      size_t k = 1 + g.below(3);
      for (size_t i = 0; i < k; ++i) {
        const ToolSpec& t = tools[g.below(tools.size())];
        GenCall c{t.name, {}, false, ""};
        if (g.chance(0.15)) {
          c.raw = true;
          c.rawText = g.chance(0.5) ? "ls -l | wc" : "not json: " + g.text(3);  // JSON text would be typed arguments
        } else {
          for (const auto& [key, declared] : t.params) {
            if (!g.chance(0.6)) continue;
            std::string type = declared == "integer" ? "number" : declared;
            if (type.empty()) type = std::vector<std::string>{"string", "object", "array", "number"}[g.below(4)];
            std::string value = type == "string" ? g.text(4)
                                : declared == "integer" ? std::to_string(int(g.below(100)) - 50)
                                                        : g.jsonValue(type, 0);
            c.args.push_back({key, type, value});
          }
          if (g.chance(0.3)) std::shuffle(c.args.begin(), c.args.end(), g.rng);  // the caller's order, not the schema's
        }
        calls.push_back(c);
      }
      if (g.chance(0.4)) content.clear();
    }
    if (!content.empty()) want.content.push_back(content);

    // The ids the model writes for `want` (spec §7.6), built independently.
    XtmlIds b(tok);
    if (thinking) b.text(want.reasoning).close("think").open("response");
    b.text(content).close("response");
    if (!calls.empty()) {
      b.open("tools");
      for (size_t i = 0; i < calls.size(); ++i) {
        const GenCall& c = calls[i];
        b.open("call", {{"tool", c.tool}, {"index", std::to_string(i + 1)}});
        ToolCall tc{"call_" + std::to_string(i + 1), c.tool, ""};
        if (c.raw) {
          b.open("json", {{"type", "object"}}).text(c.rawText).close("json");
          tc.arguments = c.rawText;
          ++withRaw;
        } else {
          std::string args;
          for (const GenArg& a : c.args) {
            b.open("argument", {{"key", a.key}, {"type", a.type}}).text(a.valueText).close("argument");
            args += args.empty() ? "{" : ", ";
            k3::appendJsonStringUtf8(args, a.key);
            args += ": ";
            if (a.type == "string") k3::appendJsonStringUtf8(args, a.valueText);
            else args += a.valueText;
          }
          tc.arguments = args.empty() ? "{}" : args + "}";
        }
        b.close("call");
        want.toolCalls.push_back(tc);
      }
      b.close("tools");
      ++withCalls;
      emptyContentBeforeCalls += content.empty();
    }
    b.end();

    // The encoder's rendering of the same message is the same ids.
    EXPECT_EQ(k3::tok::renderAssistantBody(tok, want, thinking).ids, b.ids);
    if (thinking && g.chance(0.2)) b.ids.insert(b.ids.begin(), {open, thinkTag, sep});  // the tolerated repeat

    auto r = k3test::parseOutput(tok, b.ids, tools, thinking);
    ASSERT_FALSE(r.error) << r.error->message();
    EXPECT_TRUE(r.end.complete);
    EXPECT_EQ(r.message.role, want.role);
    EXPECT_EQ(r.message.reasoning, want.reasoning);
    EXPECT_EQ(r.message.content, want.content);
    ASSERT_EQ(r.message.toolCalls.size(), want.toolCalls.size());
    for (size_t i = 0; i < want.toolCalls.size(); ++i) {
      EXPECT_EQ(r.message.toolCalls[i].id, want.toolCalls[i].id);
      EXPECT_EQ(r.message.toolCalls[i].name, want.toolCalls[i].name);
      EXPECT_EQ(r.message.toolCalls[i].arguments, want.toolCalls[i].arguments);
    }
    EXPECT_EQ(r.finishReason, want.toolCalls.empty() ? "stop" : "tool_calls");
    for (const auto& e : r.events) EXPECT_TRUE(isValidUtf8(e.text));
  }
  // The generator must actually cover the interesting shapes.
  EXPECT_GT(withCalls, 100u);
  EXPECT_GT(withRaw, 10u);
  EXPECT_GT(emptyContentBeforeCalls, 30u);
}

}  // namespace
