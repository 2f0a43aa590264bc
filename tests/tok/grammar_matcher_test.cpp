// The JSON-schema grammar matcher against an independent judge: Python's
// json module and a validator of the subset in scripts/grammar_cases.py.
// Generated documents in the grammar's form must be accepted whole (and each
// prefix kept viable); nothing the matcher accepts may be invalid; for the
// any-object schema it must agree with json.loads exactly.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "k3/io/error.h"
#include "k3/tok/grammar_matcher.h"
#include "k3/tok/grammar_schema.h"
#include "k3/tok/json_value.h"
#include "k3/tok/python_json.h"
#include "support/test_env.h"

namespace {

using k3::tok::Grammar;
using k3::tok::GrammarMatcher;
using k3::tok::JsonValue;

std::string runCases(int seed, int count) {
  const std::string cmd = "/usr/bin/python3 " + k3test::sourceDir() + "/scripts/grammar_cases.py --seed " +
                          std::to_string(seed) + " --count " + std::to_string(count);
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << cmd;
  return out;
}

std::shared_ptr<const Grammar> compile(const JsonValue& schema) {
  auto g = std::make_shared<Grammar>();
  k3::tok::SchemaCompiler sc(*g, "schema");
  g->setRoot(sc.json(schema));
  return g;
}

struct Verdict {
  bool viable = false, complete = false;
};

Verdict match(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  Verdict v;
  v.viable = m.feedBytes(text);
  v.complete = v.viable && m.accepting();
  return v;
}

TEST(GrammarMatcher, AgreesWithPythonJsonAndTheSubsetValidator) {
  const std::string cases = runCases(7, 60);
  ASSERT_FALSE(cases.empty());
  std::map<std::string, std::shared_ptr<const Grammar>> grammars;
  size_t lines = 0, canonical = 0, exact = 0, refusedValid = 0;
  size_t pos = 0;
  while (pos < cases.size()) {
    const size_t nl = cases.find('\n', pos);
    const std::string line = cases.substr(pos, nl - pos);
    pos = nl == std::string::npos ? cases.size() : nl + 1;
    if (line.empty()) continue;
    ++lines;
    const JsonValue c = k3::tok::parseJson(line, "case");
    const JsonValue& schema = *c.find("schema");
    const std::string key = k3::tok::pyDumps(schema, {.sortKeys = true, .compact = true});
    auto& g = grammars[key];
    if (!g) g = compile(schema);
    const std::string& text = c.find("text")->text;
    const bool valid = c.find("valid")->boolean;
    const Verdict v = match(g, text);
    SCOPED_TRACE(key + "  text: " + line);
    if (v.complete) {
      EXPECT_TRUE(valid) << "accepted an invalid document";
    }
    if (const JsonValue* can = c.find("canonical"); can && can->boolean) {
      ++canonical;
      EXPECT_TRUE(v.complete) << "refused a document in the grammar's own form";
    }
    if (const JsonValue* p = c.find("prefix"); p && p->boolean) {
      EXPECT_TRUE(v.viable) << "a prefix of a valid document refused";
    }
    if (const JsonValue* e = c.find("exact"); e && e->boolean) {
      ++exact;
      EXPECT_EQ(v.complete, valid);
    }
    if (valid && !v.complete) ++refusedValid;
  }
  EXPECT_GT(lines, 3000u);
  EXPECT_GT(canonical, 600u);
  EXPECT_GT(exact, 60u);
  std::printf("%zu cases, %zu canonical, %zu exact, %zu valid ones outside the generated form\n", lines, canonical, exact,
              refusedValid);
}

TEST(GrammarMatcher, RefusesOnTheFirstImpossibleByteAndKeepsItsState) {
  JsonValue schema = k3::tok::parseJson(R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],
                                           "additionalProperties":false})", "t");
  GrammarMatcher m(compile(schema));
  EXPECT_TRUE(m.feedBytes("{\"n\":"));
  EXPECT_FALSE(m.feed('"'));  // an integer, not a string
  EXPECT_FALSE(m.feed('}'));  // n is required and has no value yet
  EXPECT_TRUE(m.feedBytes("-12"));
  EXPECT_FALSE(m.feed('.'));  // integers have no fraction
  EXPECT_FALSE(m.accepting());
  EXPECT_TRUE(m.feed('}'));
  EXPECT_TRUE(m.accepting());
  EXPECT_FALSE(m.feed(' '));  // nothing after the document
}

TEST(GrammarSchema, OutsideTheSubsetIsAnErrorNamingTheKeywordAndPlace) {
  auto err = [](const char* text) {
    Grammar g;
    k3::tok::SchemaCompiler sc(g, "response_format.json_schema.schema");
    try {
      sc.json(k3::tok::parseJson(text, "t"));
    } catch (const k3::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(err(R"({"type":"object","properties":{"d":{"type":"string","format":"date"}}})"),
            "response_format.json_schema.schema.properties.d.format: keyword 'format' is not supported (supported: type, "
            "properties, required, additionalProperties, enum, const, items, minItems, maxItems, anyOf, minLength, maxLength)");
  EXPECT_EQ(err(R"({"type":"strng"})"), "response_format.json_schema.schema.type: \"strng\" is not a type (string, number, "
                                        "integer, boolean, null, object, array)");
  EXPECT_EQ(err(R"({"enum":[]})"), "response_format.json_schema.schema.enum: no value is allowed (an empty enum, or none of the type)");
  EXPECT_EQ(err(R"({"type":"array","minItems":3,"maxItems":2})"),
            "response_format.json_schema.schema.minItems: minItems is above maxItems: no array fits");
  EXPECT_EQ(err(R"({"type":"object","properties":{},"required":["x"],"additionalProperties":false})"),
            "response_format.json_schema.schema.required: 'x' is required but not a property and additionalProperties is false");
  EXPECT_EQ(err(R"({"anyOf":[{"type":"string"}],"minLength":2})"),
            "response_format.json_schema.schema.minLength: 'minLength' beside anyOf is not supported (put it inside each alternative)");
  EXPECT_EQ(err(R"({"items":[{"type":"string"}]})"),
            "response_format.json_schema.schema.items: a list of item schemas (tuple validation) is not supported");
  EXPECT_EQ(err(R"({"type":"object","title":"t","description":"d"})"), "(no error)");
}

}  // namespace
