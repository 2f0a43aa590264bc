// The token mask (trie walk) against a brute-force check of every token on
// the real Kimi vocabulary, and random decoding under the mask of the chat
// output grammar: whatever the "model" picks, the XTML output parser reads a
// well-formed answer (the call asked for, JSON content).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chat_output_test_util.h"
#include "k3/tok/chat_output_parser.h"
#include "k3/tok/chat_request.h"
#include "k3/tok/grammar_mask.h"
#include "k3/tok/grammar_output.h"
#include "k3/tok/grammar_schema.h"
#include "k3/tok/json_value.h"

namespace {

using namespace k3::tok;

const GrammarVocab& kimiTrie() {
  static const GrammarVocab vocab(k3test::kimiTokenizer());
  return vocab;
}

std::shared_ptr<const Grammar> jsonGrammar(const char* schema) {
  auto g = std::make_shared<Grammar>();
  SchemaCompiler sc(*g, "schema");
  g->setRoot(sc.json(parseJson(schema, "schema")));
  return g;
}

// Every id the mask allows, and only those, can be fed to the matcher.
void expectMaskIsExact(const std::shared_ptr<const Grammar>& g, const std::vector<uint32_t>& prefix) {
  const GrammarVocab& trie = kimiTrie();
  const Tokenizer& tok = k3test::kimiTokenizer();
  GrammarMask mask(trie, g);
  GrammarMatcher probe(g);
  for (uint32_t id : prefix) {
    ASSERT_TRUE(mask.accept(id));
    ASSERT_TRUE(probe.feedBytes(tok.vocab().bytes(id)));
  }
  std::vector<uint8_t> allowed;
  mask.compute(allowed);
  size_t n = 0;
  for (uint32_t id = 0; id < trie.vocabSize(); ++id) {
    bool ok = false;
    if (id < tok.numBase()) ok = probe.accepts(tok.vocab().bytes(id));
    for (const auto& s : trie.specials())
      if (s.id == id) ok = probe.acceptsSymbol(s.sym);
    ASSERT_EQ(bool(allowed[id]), ok) << "id " << id << " bytes '" << tok.tokenBytes(id) << "'";
    n += ok;
  }
  EXPECT_GT(n, 0u);
}

TEST(GrammarMask, EqualsFeedingEachTokenOnTheKimiVocabulary) {
  const auto& tok = k3test::kimiTokenizer();
  auto g = jsonGrammar(R"({"type":"object","properties":{"city":{"type":"string","maxLength":40},
      "n":{"type":"number"},"ok":{"enum":[true,"yes"]}},"required":["city","n"],"additionalProperties":false})");
  expectMaskIsExact(g, {});
  expectMaskIsExact(g, tok.encode("{\"city\": \"Par"));
  expectMaskIsExact(g, tok.encode("{\"city\":\"Paris\",\"n\":1"));
  expectMaskIsExact(g, tok.encode("{\"city\":\"Paris\",\"n\":1.5,\"ok\":"));
}

// Random logits, masked, drawn: a stand-in for an untrained model.
std::vector<uint32_t> randomDecode(const std::shared_ptr<const Grammar>& g, uint32_t seed, size_t limit) {
  const GrammarVocab& trie = kimiTrie();
  GrammarMask mask(trie, g);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> logits(trie.vocabSize());
  std::vector<uint32_t> ids;
  while (ids.size() < limit) {
    mask.setBudget(limit - ids.size());
    for (float& l : logits) l = noise(rng);
    if (!mask.apply(logits.data(), logits.size())) break;
    uint32_t best = 0;
    for (uint32_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[best]) best = i;
    EXPECT_TRUE(mask.accept(best));
    ids.push_back(best);
  }
  EXPECT_TRUE(mask.complete()) << "the output did not complete within " << limit << " tokens";
  return ids;
}

ChatRequest request(const char* json) { return parseChatRequest(json, "request"); }

TEST(GrammarMask, RandomDecodingOfANamedStrictCallAlwaysParses) {
  const ChatRequest req = request(R"({"messages":[{"role":"user","content":"weather?"}],
    "chat_template_kwargs":{"thinking":false},
    "tools":[{"type":"function","function":{"name":"get_weather","strict":true,"parameters":{"type":"object",
      "properties":{"city":{"type":"string","maxLength":12},"days":{"type":"integer"},"unit":{"enum":["C","F"]},
      "when":{"anyOf":[{"type":"null"},{"type":"array","items":{"type":"boolean"},"maxItems":2}]}},
      "required":["city","days","unit","when"],"additionalProperties":false}}},
      {"type":"function","function":{"name":"other","parameters":{"type":"object","properties":{}}}}],
    "tool_choice":{"type":"function","function":{"name":"get_weather"}}})");
  auto g = chatOutputGrammar(req);
  ASSERT_TRUE(g);
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const std::vector<uint32_t> ids = randomDecode(g, seed, 400);
    ChatOutputParser parser(k3test::kimiTokenizer(), req.tools, false);
    std::vector<ChatOutputEvent> events;
    for (uint32_t id : ids) parser.feed(id, events);
    ASSERT_TRUE(parser.done()) << "seed " << seed;
    int calls = 0;
    for (const auto& e : events) {
      ASSERT_NE(e.kind, ChatOutputEvent::Kind::Malformed) << e.error.message();
      if (e.kind != ChatOutputEvent::Kind::ToolCall) continue;
      ++calls;
      EXPECT_EQ(e.call.name, "get_weather");
      const JsonValue args = parseJson(e.call.arguments, "arguments");
      ASSERT_TRUE(args.isObject());
      EXPECT_EQ(args.members.size(), 4u) << e.call.arguments;
      EXPECT_TRUE(args.find("city")->isString());
      EXPECT_LE(args.find("city")->text.size(), 12u * 4);
      EXPECT_EQ(args.find("days")->kind, JsonValue::Kind::Int) << e.call.arguments;
      EXPECT_TRUE(args.find("unit")->text == "C" || args.find("unit")->text == "F");
      const JsonValue* when = args.find("when");
      EXPECT_TRUE(when->isNull() || (when->kind == JsonValue::Kind::Array && when->items.size() <= 2));
    }
    EXPECT_EQ(calls, 1);
  }
}

// json_object allows unbounded nesting and strings; under a token budget the
// mask still closes every answer in time, whatever the picks.
TEST(GrammarMask, ABudgetClosesAnyObjectInTime) {
  const ChatRequest req = request(R"({"messages":[{"role":"user","content":"x"}],"chat_template_kwargs":{"thinking":false},
    "response_format":{"type":"json_object"}})");
  auto g = chatOutputGrammar(req);
  ASSERT_TRUE(g);
  // "{}", <|close|> "response" <|sep|>, <|close|> "message" <|sep|> <|end_of_msg|>: a symbol per byte
  EXPECT_EQ(GrammarMatcher(g).minToComplete(), 2u + (1 + 8 + 1) + (1 + 7 + 1 + 1));
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const size_t limit = 20 + 10 * seed;
    const std::vector<uint32_t> ids = randomDecode(g, seed, limit);
    ASSERT_LE(ids.size(), limit);
    ChatOutputParser parser(k3test::kimiTokenizer(), req.tools, false);
    std::vector<ChatOutputEvent> events;
    for (uint32_t id : ids) parser.feed(id, events);
    ASSERT_TRUE(parser.done()) << "seed " << seed;
    std::string content;
    for (const auto& e : events)
      if (e.kind == ChatOutputEvent::Kind::Content) content += e.text;
    JsonValue v;
    ASSERT_TRUE(tryParseJson(content, v)) << content;
    EXPECT_TRUE(v.isObject()) << content;
  }
}

TEST(GrammarMask, RandomDecodingOfAJsonSchemaAnswerWithThinkingParses) {
  const ChatRequest req = request(R"({"messages":[{"role":"user","content":"x"}],
    "response_format":{"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object",
      "properties":{"a":{"type":"array","items":{"type":"integer"},"maxItems":3},"b":{"type":"string","maxLength":5}},
      "required":["a"],"additionalProperties":false}}}})");
  auto g = chatOutputGrammar(req);
  ASSERT_TRUE(g);
  // Thinking is on: the reasoning is free text, so close it by hand first.
  const auto& tok = k3test::kimiTokenizer();
  GrammarMask mask(kimiTrie(), g);
  std::vector<uint32_t> ids = tok.encode("let me think");
  k3test::XtmlIds tail(tok);
  tail.close("think").open("response");
  ids.insert(ids.end(), tail.ids.begin(), tail.ids.end());
  for (uint32_t id : ids) ASSERT_TRUE(mask.accept(id));
  std::vector<uint8_t> allowed;
  ASSERT_TRUE(mask.compute(allowed));
  EXPECT_TRUE(allowed[tok.encode("{\"")[0]]);
  EXPECT_FALSE(allowed[tok.encode("Sure")[0]]);
  EXPECT_FALSE(allowed[*tok.specialId("<|end_of_msg|>")]);
  EXPECT_FALSE(allowed[*tok.specialId("[EOS]")]);
}

}  // namespace
