#include "k3/tok/json_value.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "k3/io/error.h"

namespace k3::tok {
namespace {

namespace od = simdjson::ondemand;

struct Bad {
  std::string what;
};

// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool isIntegerToken(std::string_view t, bool& valid) {
  size_t i = 0;
  auto digits = [&] {
    const size_t s = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    return i - s;
  };
  if (i < t.size() && t[i] == '-') ++i;
  const size_t intStart = i;
  const size_t n = digits();
  valid = n > 0 && !(n > 1 && t[intStart] == '0');
  bool integer = true;
  if (valid && i < t.size() && t[i] == '.') {
    ++i;
    integer = false;
    valid = digits() > 0;
  }
  if (valid && i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    integer = false;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    valid = digits() > 0;
  }
  valid = valid && i == t.size();
  return integer;
}

JsonValue numberFrom(std::string_view raw) {
  // raw_json_token may carry trailing whitespace.
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' || raw.back() == '\t'))
    raw.remove_suffix(1);
  bool valid = false;
  const bool integer = isIntegerToken(raw, valid);
  if (!valid) throw Bad{"invalid number '" + std::string(raw.substr(0, 40)) + "'"};
  JsonValue v;
  if (integer) {
    v.kind = JsonValue::Kind::Int;
    v.text = raw == "-0" ? "0" : std::string(raw);  // Python: int("-0") == 0
    return v;
  }
  v.kind = JsonValue::Kind::Float;
  v.text = std::string(raw);
  auto [end, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v.number);
  if (ec == std::errc::result_out_of_range) {
    // Overflow -> ±inf, underflow -> ±0 or a subnormal, as Python's float().
    const std::string s(raw);
    v.number = std::strtod(s.c_str(), nullptr);
  } else if (ec != std::errc() || end != raw.data() + raw.size()) {
    throw Bad{"invalid number '" + std::string(raw.substr(0, 40)) + "'"};
  }
  return v;
}

// The value of a simdjson result, or Bad with simdjson's message.
template <class T, class Result>
T take(Result&& result) {
  T out{};
  if (auto err = std::forward<Result>(result).get(out)) throw Bad{simdjson::error_message(err)};
  return out;
}

JsonValue readValue(od::value val, int depth);

template <class Node>
JsonValue readNode(Node& node, int depth) {
  if (depth > 200) throw Bad{"nested deeper than 200 levels"};
  JsonValue v;
  switch (take<od::json_type>(node.type())) {
    case od::json_type::object:
      v.kind = JsonValue::Kind::Object;
      for (auto field : take<od::object>(node.get_object())) {
        std::string k(take<std::string_view>(field.unescaped_key()));
        JsonValue member = readValue(take<od::value>(field.value()), depth + 1);
        auto same = std::find_if(v.members.begin(), v.members.end(), [&](const auto& m) { return m.first == k; });
        if (same != v.members.end()) same->second = std::move(member);  // dict: first position, last value
        else v.members.emplace_back(std::move(k), std::move(member));
      }
      return v;
    case od::json_type::array:
      v.kind = JsonValue::Kind::Array;
      for (auto item : take<od::array>(node.get_array())) v.items.push_back(readValue(take<od::value>(item), depth + 1));
      return v;
    case od::json_type::string:
      v.kind = JsonValue::Kind::String;
      v.text = std::string(take<std::string_view>(node.get_string()));
      return v;
    case od::json_type::number: return numberFrom(node.raw_json_token());
    case od::json_type::boolean:
      v.kind = JsonValue::Kind::Bool;
      v.boolean = take<bool>(node.get_bool());
      return v;
    case od::json_type::null:
      if (!take<bool>(node.is_null())) throw Bad{"invalid literal"};
      return v;
  }
  throw Bad{"unknown JSON type"};
}

JsonValue readValue(od::value val, int depth) { return readNode(val, depth); }

// The text is read as the only element of an array ("[" text "]"): On-Demand
// then treats a scalar like any value and sees trailing content as a missing
// comma or a second element.
JsonValue parseOrThrowBad(std::string_view text) {
  std::string wrapped;
  wrapped.reserve(text.size() + 2);
  wrapped += '[';
  wrapped += text;
  wrapped += ']';
  simdjson::padded_string padded(wrapped);
  od::parser parser;
  od::document doc;
  if (auto err = parser.iterate(padded).get(doc)) throw Bad{simdjson::error_message(err)};
  JsonValue all = readNode(doc, -1);
  // Past the value, the iterator has no location; one that still has one
  // points at trailing content.
  const char* rest = nullptr;
  if (!doc.current_location().get(rest)) throw Bad{"trailing content after the JSON value"};
  if (all.items.size() != 1) throw Bad{all.items.empty() ? "no JSON value" : "more than one JSON value"};
  return std::move(all.items[0]);
}

}  // namespace

JsonValue::JsonValue() = default;
JsonValue::JsonValue(const JsonValue&) = default;
JsonValue::JsonValue(JsonValue&&) noexcept = default;
JsonValue& JsonValue::operator=(const JsonValue&) = default;
JsonValue& JsonValue::operator=(JsonValue&&) noexcept = default;
JsonValue::~JsonValue() = default;

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

JsonValue parseJson(std::string_view text, std::string_view origin) {
  try {
    return parseOrThrowBad(text);
  } catch (const Bad& b) {
    fail(ErrorKind::Format, origin, ": not valid JSON (", b.what, ")");
  }
}

bool tryParseJson(std::string_view text, JsonValue& out) {
  try {
    out = parseOrThrowBad(text);
    return true;
  } catch (const Bad&) {
    return false;
  }
}

const char* jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::Null: return "null";
    case JsonValue::Kind::Bool: return "boolean";
    case JsonValue::Kind::Int: return "integer";
    case JsonValue::Kind::Float: return "number";
    case JsonValue::Kind::String: return "string";
    case JsonValue::Kind::Array: return "array";
    case JsonValue::Kind::Object: return "object";
  }
  return "?";
}

}  // namespace k3::tok
