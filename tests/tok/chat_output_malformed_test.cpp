// The output parser on model output that breaks the XTML grammar (spec §7.6
// "What the model writes"): every case must give exactly one Malformed event,
// at the offending token, naming what was expected and what came; nothing of
// the broken structure may surface as content or as a tool call.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tok/chat_output_test_util.h"

namespace {

using k3::tok::ChatOutputEvent;
using k3::tok::ToolSpec;
using k3test::XtmlIds;

std::vector<ToolSpec> tools() {
  return {{"get_weather", {{"city", "string"}, {"days", "integer"}, {"metric", "boolean"}}},
          {"search", {{"query", "string"}, {"limit", "number"}, {"filters", "object"}, {"tags", "array"}, {"any", ""}}}};
}

// Reasoning, then an empty response, then OPEN(tools): where most cases go wrong.
XtmlIds& toTools(XtmlIds& b) { return b.text("plan").close("think").open("response").close("response").open("tools"); }
XtmlIds& callOpen(XtmlIds& b, const std::string& tool = "get_weather", const std::string& index = "1") {
  return b.open("call", {{"tool", tool}, {"index", index}});
}

// A call of `tool` whose one argument is the offending one; returns its position.
size_t badArgument(XtmlIds& b, const std::string& tool, const std::string& key, const std::string& type,
                   const std::string& value) {
  callOpen(toTools(b), tool);
  const size_t p = b.size();
  b.open("argument", {{"key", key}, {"type", type}}).text(value).close("argument");
  return p;
}

struct Case {
  const char* name;
  std::function<size_t(XtmlIds&)> build;  // builds the ids; returns the offending token's position
  const char* expectedPart;               // must appear in "expected …"
  const char* foundPart;                  // must appear in "found …"
  bool thinking = true;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"unknown tool",
       [](XtmlIds& b) { size_t p = toTools(b).size(); callOpen(b, "get_wether").close("call"); return p; },
       "a declared tool (\"get_weather\", \"search\")", "tool=\"get_wether\""},
      {"index 2 before 1",
       [](XtmlIds& b) { size_t p = toTools(b).size(); callOpen(b, "get_weather", "2"); return p; },
       "index=\"1\"", "index=\"2\""},
      {"index repeated",
       [](XtmlIds& b) {
         callOpen(toTools(b)).close("call");
         size_t p = b.size();
         callOpen(b, "search", "1");
         return p;
       },
       "index=\"2\"", "index=\"1\""},
      {"index with a leading zero",
       [](XtmlIds& b) { size_t p = toTools(b).size(); callOpen(b, "get_weather", "01"); return p; },
       "index=\"1\"", "index=\"01\""},
      {"bad entity &lt; in an attribute",
       [](XtmlIds& b) {
         size_t p = toTools(b).size();
         b.special("<|open|>").text("call").text(" tool").text("=\"").text("get&lt;weather").text("\"").special("<|sep|>");
         return p;
       },
       "&quot; or &amp;", "\"&lt;\""},
      {"bare & in an attribute",
       [](XtmlIds& b) {
         size_t p = toTools(b).size();
         b.special("<|open|>").text("call tool=\"a & b\" index=\"1\"").special("<|sep|>");
         return p;
       },
       "&quot; or &amp;", "\"& b\" in "},
      {"number argument that is not JSON",
       [](XtmlIds& b) { return badArgument(b, "search", "limit", "number", "ten"); },
       "a finite JSON number as the value of argument \"limit\" of \"search\"", "\"ten\" ("},
      {"NaN",
       [](XtmlIds& b) { return badArgument(b, "search", "limit", "number", "NaN"); },
       "a finite JSON number", "\"NaN\" (not one JSON value)"},
      {"Infinity",
       [](XtmlIds& b) { return badArgument(b, "search", "limit", "number", "-Infinity"); },
       "a finite JSON number", "\"-Infinity\""},
      {"number out of range",
       [](XtmlIds& b) { return badArgument(b, "search", "limit", "number", "1e400"); },
       "a finite JSON number", "\"1e400\" (out of range)"},
      {"value of another JSON type than its type attribute",
       [](XtmlIds& b) { return badArgument(b, "search", "any", "object", "[1, 2]"); },
       "a JSON object as the value of argument \"any\"", "(a JSON array)"},
      {"two JSON values in one argument",
       [](XtmlIds& b) { return badArgument(b, "search", "tags", "array", "[1] [2]"); },
       "a JSON array", "\"[1] [2]\" ("},
      {"unknown type attribute",
       [](XtmlIds& b) { return badArgument(b, "search", "any", "int", "1"); },
       "type boolean, null, number, string, object or array", "type=\"int\""},
      {"argument key repeated",
       [](XtmlIds& b) {
         callOpen(toTools(b));
         b.open("argument", {{"key", "city"}, {"type", "string"}}).text("Oslo").close("argument");
         size_t p = b.size();
         b.open("argument", {{"key", "city"}, {"type", "string"}}).text("Rome").close("argument");
         return p;
       },
       "each argument key once", "a second argument \"city\""},
      {"argument without a type",
       [](XtmlIds& b) {
         callOpen(toTools(b));
         size_t p = b.size();
         b.open("argument", {{"key", "city"}}).text("Oslo").close("argument");
         return p;
       },
       "OPEN(argument, key=K, type=T)", "OPEN(argument, key=\"city\")"},
      {"CLOSE(call) without an open call",
       [](XtmlIds& b) { size_t p = toTools(b).size(); b.close("call"); return p; },
       "OPEN(call, …)", "CLOSE(call)"},
      {"text inside tools outside a call",
       [](XtmlIds& b) {
         callOpen(toTools(b)).close("call");
         size_t p = b.size();
         b.text("\n");
         return p;
       },
       "OPEN(call, …) or CLOSE(tools)", "text \"\\n\""},
      {"text inside a call outside an argument",
       [](XtmlIds& b) {
         callOpen(toTools(b));
         size_t p = b.size();
         b.text("city");
         return p;
       },
       "OPEN(argument, …), OPEN(json, …) or CLOSE(call) in call 1 (get_weather)", "text \"city\""},
      {"<|end_of_msg|> in the middle of a call",
       [](XtmlIds& b) {
         callOpen(toTools(b)).open("argument", {{"key", "city"}, {"type", "string"}}).text("Os");
         size_t p = b.size();
         b.endOfMessage();
         return p;
       },
       "the value of argument \"city\" or CLOSE(argument)", "<|end_of_msg|> inside tool call 1 (get_weather)"},
      {"nested <|open|> in an attribute",
       [](XtmlIds& b) {
         toTools(b).special("<|open|>").text("call").text(" tool").text("=\"");
         size_t p = b.size();
         b.special("<|open|>");
         return p;
       },
       "the rest of the marker opened at token", "<|open|>"},
      {"<|close|> inside a marker",
       [](XtmlIds& b) {
         b.text("r").special("<|close|>").text("thi");
         size_t p = b.size();
         b.special("<|close|>");
         return p;
       },
       "the rest of the marker", "<|close|>"},
      {"<|end_of_msg|> inside a marker",
       [](XtmlIds& b) {
         b.text("r").special("<|close|>").text("think");
         size_t p = b.size();
         b.endOfMessage();
         return p;
       },
       "the rest of the marker", "<|end_of_msg|>"},
      {"stray <|sep|>",
       [](XtmlIds& b) {
         b.text("reason");
         size_t p = b.size();
         b.special("<|sep|>");
         return p;
       },
       "reasoning text or CLOSE(think)", "<|sep|> outside a marker"},
      {"CLOSE(response) while thinking",
       [](XtmlIds& b) {
         b.text("reason");
         size_t p = b.size();
         b.close("response");
         return p;
       },
       "reasoning text or CLOSE(think)", "CLOSE(response)"},
      {"OPEN(think) again after position 0",
       [](XtmlIds& b) {
         b.text("a");
         size_t p = b.size();
         b.open("think");
         return p;
       },
       "reasoning text or CLOSE(think)", "OPEN(think)"},
      {"OPEN(think) at position 0 without thinking",
       [](XtmlIds& b) { b.open("think"); return size_t(0); },
       "content text or CLOSE(response)", "OPEN(think)", false},
      {"text between the channels",
       [](XtmlIds& b) {
         b.text("r").close("think");
         size_t p = b.size();
         b.text(" ");
         return p;
       },
       "OPEN(response)", "text \" \""},
      {"attribute on a channel",
       [](XtmlIds& b) {
         b.close("think");
         size_t p = b.size();
         b.open("response", {{"lang", "en"}});
         return p;
       },
       "OPEN(response)", "OPEN(response, lang=\"en\")"},
      {"marker text that is not tag and attributes",
       [](XtmlIds& b) {
         size_t p = toTools(b).size();
         b.special("<|open|>").text("call tool=get_weather").special("<|sep|>");
         return p;
       },
       "' key=\"value\"' attributes after the tag", "<|open|> \"call tool=get_weather\""},
      {"empty marker",
       [](XtmlIds& b) {
         b.text("r");
         size_t p = b.size();
         b.special("<|close|>").special("<|sep|>");
         return p;
       },
       "a tag name", "<|close|> \"\""},
      {"json block after an argument",
       [](XtmlIds& b) {
         callOpen(toTools(b)).open("argument", {{"key", "city"}, {"type", "string"}}).text("Oslo").close("argument");
         size_t p = b.size();
         b.open("json", {{"type", "object"}}).text("x").close("json");
         return p;
       },
       "OPEN(argument, …) or CLOSE(call) after an argument", "OPEN(json, type=\"object\")"},
      {"argument after a json block",
       [](XtmlIds& b) {
         callOpen(toTools(b)).open("json", {{"type", "object"}}).text("x").close("json");
         size_t p = b.size();
         b.open("argument", {{"key", "city"}, {"type", "string"}});
         return p;
       },
       "CLOSE(call) after the json block of call 1", "OPEN(argument"},
      {"<|open|> inside an argument value",
       [](XtmlIds& b) {
         callOpen(toTools(b)).open("argument", {{"key", "city"}, {"type", "string"}}).text("Oslo");
         size_t p = b.size();
         b.special("<|open|>");
         return p;
       },
       "the value of argument \"city\" or CLOSE(argument)", "<|open|>"},
      {"empty tools block",
       [](XtmlIds& b) { size_t p = toTools(b).size(); b.close("tools"); return p; },
       "OPEN(call, …)", "CLOSE(tools)"},
      {"text after CLOSE(message)",
       [](XtmlIds& b) {
         b.text("r").close("think").open("response").text("hi").close("response").close("message");
         size_t p = b.size();
         b.text("!");
         return p;
       },
       "<|end_of_msg|>", "text \"!\""},
      {"another special token in the content",
       [](XtmlIds& b) {
         b.close("think").open("response").text("hi");
         size_t p = b.size();
         b.special("[EOS]");
         return p;
       },
       "content text or CLOSE(response)", "the special token [EOS]"},
      {"a token after <|end_of_msg|>",
       [](XtmlIds& b) {
         b.close("think").open("response").text("hi").close("response").end();
         size_t p = b.size();
         b.text("more");
         return p;
       },
       "nothing after <|end_of_msg|>", "token id"},
      {"a call with no tools declared",
       [](XtmlIds& b) { size_t p = toTools(b).size(); callOpen(b, "get_weather"); return p; },
       "no tool call (no tools were declared)", "tool=\"get_weather\""},
  };
  return all;
}

TEST(ChatOutputMalformed, EachCaseGivesOneMalformedEventAtTheOffendingToken) {
  const auto& tok = k3test::kimiTokenizer();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    XtmlIds b(tok);
    const size_t where = c.build(b);
    // Tokens after the error must change nothing.
    b.text("trailing").close("message").endOfMessage();
    const bool noTools = std::string(c.name) == "a call with no tools declared";
    auto r = k3test::parseOutput(tok, b.ids, noTools ? std::vector<ToolSpec>{} : tools(), c.thinking);
    ASSERT_TRUE(r.error.has_value());
    EXPECT_EQ(r.error->position, where) << r.error->message();
    EXPECT_NE(r.error->expected.find(c.expectedPart), std::string::npos) << r.error->message();
    EXPECT_NE(r.error->found.find(c.foundPart), std::string::npos) << r.error->message();
    EXPECT_EQ(r.error->message().find('\n'), std::string::npos);
    EXPECT_TRUE(r.end.malformed);
    EXPECT_EQ(r.finishReason, "");
    size_t malformed = 0;
    for (const auto& e : r.events) {
      malformed += e.kind == ChatOutputEvent::Kind::Malformed;
      // Only calls closed before the error may have been emitted.
      if (e.kind == ChatOutputEvent::Kind::ToolCall) {
        EXPECT_EQ(e.index, 1) << "only a case's first call is ever closed";
      }
      // Structure never leaks into text.
      EXPECT_EQ(e.text.find("tool"), std::string::npos);
      EXPECT_EQ(e.text.find("trailing"), std::string::npos);
    }
    EXPECT_EQ(malformed, 1u);
    EXPECT_EQ(r.events.back().kind, ChatOutputEvent::Kind::Malformed);  // nothing after it
    EXPECT_LE(r.message.toolCalls.size(), 1u);
  }
}

TEST(ChatOutputMalformed, GenerationStoppingInsideACallIsIncompleteNotACall) {
  const auto& tok = k3test::kimiTokenizer();
  XtmlIds b(tok);
  callOpen(toTools(b)).open("argument", {{"key", "city"}, {"type", "string"}}).text("Oslo").close("argument");
  auto r = k3test::parseOutput(tok, b.ids, tools(), true);
  EXPECT_FALSE(r.error.has_value());
  EXPECT_FALSE(r.end.complete);
  EXPECT_FALSE(r.end.malformed);
  EXPECT_EQ(r.end.state, "inside tool call 1 (get_weather)");
  EXPECT_TRUE(r.message.toolCalls.empty());
  EXPECT_EQ(r.finishReason, "length");
  EXPECT_EQ(r.message.reasoning, "plan");
}

TEST(ChatOutputMalformed, GenerationStoppingInsideAMarkerSaysSo) {
  const auto& tok = k3test::kimiTokenizer();
  XtmlIds b(tok);
  b.text("r").close("think").special("<|open|>").text("resp");
  auto r = k3test::parseOutput(tok, b.ids, tools(), true);
  EXPECT_FALSE(r.end.complete);
  EXPECT_EQ(r.end.state, "after the reasoning, inside a marker");
  EXPECT_EQ(r.finishReason, "length");
  EXPECT_TRUE(r.message.content.empty());
}

}  // namespace
