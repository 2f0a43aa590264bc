// libFuzzer target: the grammar compiler (JSON schemas, in both the JSON and
// the XTML argument form) and the masked sampler. The input is a schema
// (JSON text) up to the first NUL byte, then one byte per decoding step that
// picks among the allowed tokens of a small vocabulary (single bytes, JSON
// and XTML pieces, split UTF-8, the structure tokens). Beyond "no crash, no
// hang": a schema outside the subset is a k3::Error, never anything else; an
// allowed token is always accepted; a state with no allowed token is a
// complete one; and under a token budget every decoding completes within it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "k3/io/error.h"
#include "k3/tok/grammar_mask.h"
#include "k3/tok/grammar_schema.h"
#include "k3/tok/json_value.h"
#include "k3/tok/tokenizer.h"
#include "k3/tok/vocab.h"

namespace {

using namespace k3::tok;

const char* const kWords[] = {"{\"", "\":", "\",", "\"}", "true", "false", "null", "\\u", "\\ud83d", "\\ude00", "12",
                              "-0.5e+3", "[]", "{}", "\xE4\xBD", "\xA0", "\xF0\x9F", "argument key=\"", "\" type=\"",
                              "string\"", "number\"", "object\"", "array\"", "json type=\"object\"", " ", "\n  ", "é"};
constexpr size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

Tokenizer makeTokenizer() {
  std::string model;
  for (int b = 0; b < 256; ++b) model += encodeBase64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  for (size_t i = 0; i < kWordCount; ++i) model += encodeBase64(kWords[i]) + " " + std::to_string(256 + i) + "\n";
  const size_t numBase = 256 + kWordCount;
  auto entry = [&](size_t off, const char* content) {
    return "\"" + std::to_string(numBase + off) + "\": {\"content\": \"" + content + "\"}";
  };
  const std::string config = "{\"added_tokens_decoder\": {" + entry(1, "[EOS]") + ", " + entry(2, "<|end_of_msg|>") + ", " +
                             entry(3, "<|open|>") + ", " + entry(4, "<|close|>") + ", " + entry(5, "<|sep|>") + "}}";
  return Tokenizer(Vocab::parse(model, "fuzz.tiktoken"), AddedTokens::fromConfigText(config, numBase, "fuzz.config"));
}

const GrammarVocab& vocab() {
  static const Tokenizer tok = makeTokenizer();
  static const GrammarVocab v(tok);
  return v;
}

void check(bool ok) {
  if (!ok) std::abort();
}

// Decodes under the mask, each step taking the allowed token `choices`
// points at; the budget is the steps left, so the output must complete.
void decode(const std::shared_ptr<const Grammar>& g, const uint8_t* choices, size_t n) {
  const size_t budget = 48;
  GrammarMask mask(vocab(), g);
  GrammarMatcher probe(g);
  const uint32_t shortest = probe.minToComplete();
  std::vector<uint8_t> allowed;
  for (size_t step = 0; step < budget; ++step) {
    mask.setBudget(budget - step);
    if (!mask.compute(allowed)) {
      check(mask.complete());
      return;
    }
    std::vector<uint32_t> ids;
    for (uint32_t id = 0; id < allowed.size(); ++id)
      if (allowed[id]) ids.push_back(id);
    const uint32_t pick = ids[(step < n ? choices[step] : 0) % ids.size()];
    check(mask.accept(pick));
    if (step + 1 == budget && shortest < budget) check(mask.complete());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t cut = 0;
  while (cut < size && data[cut] != 0) ++cut;
  JsonValue schema;
  if (!tryParseJson(std::string_view(reinterpret_cast<const char*>(data), cut), schema)) return 0;
  const uint8_t* choices = data + std::min(size, cut + 1);
  const size_t n = size - std::min(size, cut + 1);
  for (int form = 0; form < 2; ++form) {
    auto g = std::make_shared<Grammar>();
    try {
      SchemaCompiler sc(*g, "fuzz");
      g->setRoot(form == 0 ? sc.json(schema) : sc.xtmlArguments(schema));
    } catch (const k3::Error&) {
      continue;  // outside the subset: a clean error
    }
    decode(g, choices, n);
  }
  return 0;
}
