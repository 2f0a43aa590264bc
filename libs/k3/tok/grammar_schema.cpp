#include "k3/tok/grammar_schema.h"

#include <algorithm>
#include <span>
#include <string_view>
#include <vector>

#include "k3/io/error.h"
#include "k3/tok/chat_output_marker.h"
#include "k3/tok/python_json.h"

namespace k3::tok {
namespace {

using Kind = JsonValue::Kind;

constexpr uint32_t kMaxWs = 20;
constexpr uint32_t kMaxBound = 1u << 30;
constexpr std::string_view kAnnotations[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment"};
constexpr std::string_view kKeywords[] = {"type",  "properties", "required", "additionalProperties", "enum",      "const",
                                          "items", "minItems",   "maxItems", "anyOf",                "minLength", "maxLength"};
constexpr std::string_view kTypes[] = {"string", "number", "integer", "boolean", "null", "object", "array"};
constexpr std::string_view kXtmlTypes[] = {"string", "number", "boolean", "null", "object", "array"};

bool oneOf(std::string_view s, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

// Whether a literal value has a schema type (an integer literal is also a number).
bool valueHasType(const JsonValue& v, std::string_view type) {
  switch (v.kind) {
    case Kind::Null: return type == "null";
    case Kind::Bool: return type == "boolean";
    case Kind::Int: return type == "integer" || type == "number";
    case Kind::Float: return type == "number";
    case Kind::String: return type == "string";
    case Kind::Array: return type == "array";
    case Kind::Object: return type == "object";
  }
  return false;
}

// The XTML type= of a value (spec §7.6).
std::string_view xtmlTypeOf(const JsonValue& v) {
  switch (v.kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return "boolean";
    case Kind::Int:
    case Kind::Float: return "number";
    case Kind::String: return "string";
    case Kind::Array: return "array";
    case Kind::Object: return "object";
  }
  return "null";
}

std::string compactJson(const JsonValue& v) { return pyDumps(v, {.sortKeys = false, .compact = true, .literalFloats = true}); }

// A symbol string: bytes and structure tokens.
struct Syms {
  std::vector<uint16_t> s;
  Syms& bytes(std::string_view b) {
    for (char c : b) s.push_back(static_cast<uint8_t>(c));
    return *this;
  }
  Syms& sym(int x) {
    s.push_back(static_cast<uint16_t>(x));
    return *this;
  }
};

const JsonValue& trueSchema() {
  static const JsonValue t = [] {
    JsonValue v;
    v.kind = Kind::Bool;
    v.boolean = true;
    return v;
  }();
  return t;
}

}  // namespace


struct SchemaCompiler::Shape {
  bool any = false;                // no constraint at all
  std::vector<std::string> types;  // empty: every type
  const JsonValue* anyOf = nullptr;
  bool hasValues = false;  // enum or const
  std::vector<const JsonValue*> values;
  std::vector<std::pair<std::string, const JsonValue*>> properties;
  std::vector<std::string> required;
  const JsonValue* additional = nullptr;  // nullptr: absent (true)
  const JsonValue* items = nullptr;
  uint32_t minItems = 0, maxItems = kUnbounded, minLength = 0, maxLength = kUnbounded;
};

void SchemaCompiler::bad(const std::string& path, const std::string& what) const {
  fail(ErrorKind::Usage, origin_, path, ": ", what);
}

SchemaCompiler::Shape SchemaCompiler::shapeOf(const JsonValue& s, const std::string& path) {
  Shape sh;
  if (s.kind == Kind::Bool) {
    if (!s.boolean) bad(path, "the schema false allows no value");
    sh.any = true;
    return sh;
  }
  if (!s.isObject()) bad(path, std::string("a schema must be an object or a boolean, got ") + jsonKindName(s.kind));
  auto bound = [&](const JsonValue& v, const std::string& key) -> uint32_t {
    if (v.kind != Kind::Int || v.text.empty() || v.text[0] == '-' || v.text.size() > 10 || std::stoull(v.text) > kMaxBound)
      bad(path + "." + key, "expected an integer from 0 to " + std::to_string(kMaxBound) + ", got " + compactJson(v));
    return static_cast<uint32_t>(std::stoull(v.text));
  };
  bool constraining = false;
  for (const auto& [key, v] : s.members) {
    const std::string at = path + "." + key;
    if (oneOf(key, kAnnotations)) continue;
    if (!oneOf(key, kKeywords))
      bad(at, "keyword '" + key +
                  "' is not supported (supported: type, properties, required, additionalProperties, enum, const, items, "
                  "minItems, maxItems, anyOf, minLength, maxLength)");
    constraining = true;
    if (key == "type") {
      std::vector<const JsonValue*> names;
      if (v.isString()) names.push_back(&v);
      else if (v.kind == Kind::Array)
        for (const JsonValue& n : v.items) names.push_back(&n);
      else bad(at, "expected a type name or a list of them");
      if (names.empty()) bad(at, "an empty list of types allows no value");
      for (const JsonValue* n : names) {
        if (!n->isString() || !oneOf(n->text, kTypes))
          bad(at, compactJson(*n) + " is not a type (string, number, integer, boolean, null, object, array)");
        sh.types.push_back(n->text);
      }
    } else if (key == "properties") {
      if (!v.isObject()) bad(at, "expected an object of schemas");
      for (const auto& [name, ps] : v.members) sh.properties.emplace_back(name, &ps);
    } else if (key == "required") {
      if (v.kind != Kind::Array) bad(at, "expected a list of property names");
      for (const JsonValue& n : v.items) {
        if (!n.isString()) bad(at, "expected property names (strings), got " + compactJson(n));
        if (std::find(sh.required.begin(), sh.required.end(), n.text) == sh.required.end()) sh.required.push_back(n.text);
      }
    } else if (key == "additionalProperties") {
      sh.additional = &v;
    } else if (key == "enum" || key == "const") {
      if (sh.hasValues) bad(at, "enum and const together are not supported (give one)");
      sh.hasValues = true;
      if (key == "const") {
        sh.values.push_back(&v);
      } else {
        if (v.kind != Kind::Array) bad(at, "expected a list of values");
        for (const JsonValue& e : v.items) sh.values.push_back(&e);
      }
    } else if (key == "items") {
      if (v.kind == Kind::Array) bad(at, "a list of item schemas (tuple validation) is not supported");
      sh.items = &v;
    } else if (key == "minItems") {
      sh.minItems = bound(v, key);
    } else if (key == "maxItems") {
      sh.maxItems = bound(v, key);
    } else if (key == "minLength") {
      sh.minLength = bound(v, key);
    } else if (key == "maxLength") {
      sh.maxLength = bound(v, key);
    } else if (key == "anyOf") {
      if (v.kind != Kind::Array || v.items.empty()) bad(at, "expected a non-empty list of schemas");
      sh.anyOf = &v;
    }
  }
  if (sh.anyOf) {
    for (const auto& [key, v] : s.members)
      if (key != "anyOf" && !oneOf(key, kAnnotations))
        bad(path + "." + key, "'" + key + "' beside anyOf is not supported (put it inside each alternative)");
    return sh;
  }
  if (sh.minItems > sh.maxItems) bad(path + ".minItems", "minItems is above maxItems: no array fits");
  if (sh.minLength > sh.maxLength) bad(path + ".minLength", "minLength is above maxLength: no string fits");
  if (sh.hasValues) {
    std::vector<const JsonValue*> kept;
    for (const JsonValue* v : sh.values) {
      bool ok = sh.types.empty();
      for (const std::string& t : sh.types) ok = ok || valueHasType(*v, t);
      if (ok) kept.push_back(v);
    }
    if (kept.empty()) bad(path + (s.find("const") ? ".const" : ".enum"), "no value is allowed (an empty enum, or none of the type)");
    sh.values = std::move(kept);
    return sh;
  }
  if (sh.types.empty()) {  // no type: what the keywords describe, else any value
    if (!sh.properties.empty() || !sh.required.empty() || sh.additional) sh.types = {"object"};
    else if (sh.items || s.find("minItems") || s.find("maxItems")) sh.types = {"array"};
    else if (s.find("minLength") || s.find("maxLength")) sh.types = {"string"};
  }
  sh.any = !constraining || (sh.types.empty() && !sh.hasValues);
  return sh;
}

uint32_t SchemaCompiler::ws() {
  if (ws_ == UINT32_MAX) ws_ = g_.leaf(GrammarNode::Kind::Ws, 0, kMaxWs);
  return ws_;
}

uint32_t SchemaCompiler::empty() {
  if (empty_ == UINT32_MAX) empty_ = g_.seq({});
  return empty_;
}

uint32_t SchemaCompiler::freeObject(uint32_t value) {
  const uint32_t member = g_.seq({g_.leaf(GrammarNode::Kind::String, 0, kUnbounded), ws(), g_.literal(":"), ws(), value, ws()});
  const uint32_t more = g_.repeat(g_.seq({g_.literal(","), ws(), member}), 0, kUnbounded);
  return g_.seq({g_.literal("{"), ws(), g_.choice({empty(), g_.seq({member, more})}), g_.literal("}")});
}

namespace {
uint32_t arrayOf(Grammar& g, uint32_t item, uint32_t ws, uint32_t empty, uint32_t min, uint32_t max) {
  if (max == 0) return g.seq({g.literal("["), ws, g.literal("]")});
  const uint32_t first = g.seq({item, ws});
  const uint32_t next = g.seq({g.literal(","), ws, item, ws});
  const uint32_t tail = g.repeat(next, min > 0 ? min - 1 : 0, max == kUnbounded ? kUnbounded : max - 1);
  uint32_t body = g.seq({first, tail});
  if (min == 0) body = g.choice({empty, body});
  return g.seq({g.literal("["), ws, body, g.literal("]")});
}
}  // namespace

uint32_t SchemaCompiler::anyValue() {
  if (any_ != UINT32_MAX) return any_;
  GrammarNode placeholder;
  placeholder.kind = GrammarNode::Kind::Choice;
  any_ = g_.add(placeholder);
  std::vector<uint32_t> kids = {g_.leaf(GrammarNode::Kind::String, 0, kUnbounded), g_.leaf(GrammarNode::Kind::Number),
                                g_.literal(std::vector<std::vector<uint16_t>>{grammarSymbols("true"), grammarSymbols("false"),
                                                                              grammarSymbols("null")}),
                                freeObject(any_), arrayOf(g_, any_, ws(), empty(), 0, kUnbounded)};
  g_.node(any_).kids = std::move(kids);
  return any_;
}

uint32_t SchemaCompiler::anyObject() {
  if (anyObject_ == UINT32_MAX) anyObject_ = freeObject(anyValue());
  return anyObject_;
}

uint32_t SchemaCompiler::object(const Shape& sh, const std::string& path) {
  auto props = sh.properties;
  const bool closed = sh.additional && sh.additional->kind == Kind::Bool && !sh.additional->boolean;
  for (const std::string& r : sh.required) {
    bool declared = false;
    for (const auto& p : props) declared = declared || p.first == r;
    if (declared) continue;
    if (closed) bad(path + ".required", "'" + r + "' is required but not a property and additionalProperties is false");
    props.emplace_back(r, sh.additional ? sh.additional : &trueSchema());  // a required extra property
  }
  if (props.empty()) {
    if (closed) return g_.seq({g_.literal("{"), ws(), g_.literal("}")});
    return sh.additional ? freeObject(json(*sh.additional, path + ".additionalProperties")) : anyObject();
  }
  // Members in property order. first[i]: the members from i on, none written
  // yet; rest[i]: the same after at least one (so each starts with a comma).
  const size_t n = props.size();
  std::vector<uint32_t> first(n + 1), rest(n + 1);
  first[n] = rest[n] = empty();
  for (size_t i = n; i-- > 0;) {
    std::string key;
    appendPyDumps(key, [&] {
      JsonValue k;
      k.kind = Kind::String;
      k.text = props[i].first;
      return k;
    }(), {});
    const uint32_t member = g_.seq({g_.literal(key), ws(), g_.literal(":"), ws(),
                                    json(*props[i].second, path + ".properties." + props[i].first), ws()});
    const bool req = std::find(sh.required.begin(), sh.required.end(), props[i].first) != sh.required.end();
    const uint32_t withComma = g_.seq({g_.literal(","), ws(), member, rest[i + 1]});
    const uint32_t asFirst = g_.seq({member, rest[i + 1]});
    rest[i] = req ? withComma : g_.choice({withComma, rest[i + 1]});
    first[i] = req ? asFirst : g_.choice({asFirst, first[i + 1]});
  }
  return g_.seq({g_.literal("{"), ws(), first[0], g_.literal("}")});
}

uint32_t SchemaCompiler::array(const Shape& sh, const std::string& path) {
  const uint32_t item = sh.items ? json(*sh.items, path + ".items") : anyValue();
  return arrayOf(g_, item, ws(), empty(), sh.minItems, sh.maxItems);
}

uint32_t SchemaCompiler::typeValue(const Shape& sh, const std::string& type, bool xtml, const std::string& path) {
  using K = GrammarNode::Kind;
  if (type == "string") return g_.leaf(xtml ? K::RawString : K::String, sh.minLength, sh.maxLength);
  if (type == "number") return g_.leaf(K::Number, 0);
  if (type == "integer") return g_.leaf(K::Number, 1);
  if (type == "boolean") return g_.literal(std::vector<std::vector<uint16_t>>{grammarSymbols("true"), grammarSymbols("false")});
  if (type == "null") return g_.literal("null");
  if (type == "object") return object(sh, path);
  return array(sh, path);
}

uint32_t SchemaCompiler::anyOfChoice(const Shape& sh, const std::string& path,
                                     uint32_t (SchemaCompiler::*compile)(const JsonValue&, const std::string&)) {
  std::vector<uint32_t> alts;
  for (size_t i = 0; i < sh.anyOf->items.size(); ++i)
    alts.push_back((this->*compile)(sh.anyOf->items[i], path + ".anyOf[" + std::to_string(i) + "]"));
  return g_.choice(std::move(alts));
}

uint32_t SchemaCompiler::json(const JsonValue& s, const std::string& path) {
  const Shape sh = shapeOf(s, path);
  if (sh.anyOf) return anyOfChoice(sh, path, &SchemaCompiler::json);
  if (sh.hasValues) {
    std::vector<std::vector<uint16_t>> texts;
    for (const JsonValue* v : sh.values) texts.push_back(grammarSymbols(compactJson(*v)));
    return g_.literal(texts);
  }
  if (sh.any || sh.types.empty()) return anyValue();
  std::vector<uint32_t> alts;
  for (const std::string& t : sh.types) alts.push_back(typeValue(sh, t, false, path));
  return g_.choice(std::move(alts));
}

uint32_t SchemaCompiler::xtmlTypedValue(const JsonValue& s, const std::string& path) {
  const Shape sh = shapeOf(s, path);
  if (sh.anyOf) return anyOfChoice(sh, path, &SchemaCompiler::xtmlTypedValue);
  if (sh.hasValues) {  // type, `"`, <|sep|> and the value as one literal each
    std::vector<std::vector<uint16_t>> texts;
    for (const JsonValue* v : sh.values)
      texts.push_back(Syms{}.bytes(xtmlTypeOf(*v)).bytes("\"").sym(kSymSep).bytes(v->isString() ? v->text : compactJson(*v)).s);
    return g_.literal(texts);
  }
  std::vector<std::string> types = sh.types;
  if (sh.any || types.empty()) types.assign(std::begin(kXtmlTypes), std::end(kXtmlTypes));
  std::vector<uint32_t> alts;
  for (const std::string& t : types) {
    const std::string_view attr = t == "integer" ? "number" : std::string_view(t);
    const uint32_t value = typeValue(sh, t, true, path);
    alts.push_back(g_.seq({g_.literal(std::vector<std::vector<uint16_t>>{Syms{}.bytes(attr).bytes("\"").sym(kSymSep).s}), value}));
  }
  return g_.choice(std::move(alts));
}

uint32_t SchemaCompiler::xtmlArguments(const JsonValue& parameters) {
  const Shape sh = shapeOf(parameters, "");
  if (sh.anyOf) bad(".anyOf", "anyOf at the top of a function's parameters is not supported (it must be one object schema)");
  if (sh.hasValues) bad(parameters.find("enum") ? ".enum" : ".const", "a function's parameters must be an object schema, not a set of values");
  if (!sh.any && !sh.types.empty() && std::find(sh.types.begin(), sh.types.end(), "object") == sh.types.end())
    bad(".type", "a function's parameters must be an object schema");
  auto props = sh.properties;
  const bool closed = sh.additional && sh.additional->kind == Kind::Bool && !sh.additional->boolean;
  for (const std::string& r : sh.required) {
    bool declared = false;
    for (const auto& p : props) declared = declared || p.first == r;
    if (declared) continue;
    if (closed) bad(".required", "'" + r + "' is required but not a property and additionalProperties is false");
    props.emplace_back(r, sh.additional ? sh.additional : &trueSchema());
  }
  if (props.empty()) {
    if (closed) return empty();
    // No declared arguments: nothing, or one raw JSON object block (spec §7.6).
    const uint32_t obj = sh.additional ? freeObject(json(*sh.additional, ".additionalProperties")) : anyObject();
    return g_.choice({empty(), g_.seq({g_.literal(std::vector<std::vector<uint16_t>>{
                                           Syms{}.sym(kSymOpen).bytes("json type=\"object\"").sym(kSymSep).s}),
                                       obj,
                                       g_.literal(std::vector<std::vector<uint16_t>>{
                                           Syms{}.sym(kSymClose).bytes("json").sym(kSymSep).s})})});
  }
  std::vector<uint32_t> parts;
  const uint32_t closeArg = g_.literal(std::vector<std::vector<uint16_t>>{Syms{}.sym(kSymClose).bytes("argument").sym(kSymSep).s});
  for (const auto& [key, schema] : props) {
    const uint32_t open = g_.literal(std::vector<std::vector<uint16_t>>{
        Syms{}.sym(kSymOpen).bytes("argument key=\"").bytes(escapeAttribute(key)).bytes("\" type=\"").s});
    const uint32_t member = g_.seq({open, xtmlTypedValue(*schema, ".properties." + key), closeArg});
    const bool req = std::find(sh.required.begin(), sh.required.end(), key) != sh.required.end();
    parts.push_back(req ? member : g_.choice({member, empty()}));
  }
  return g_.seq(std::move(parts));
}

}  // namespace k3::tok
