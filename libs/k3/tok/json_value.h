// A JSON value as Python's json.loads gives it, which is what Moonshot's
// encoder (encoding_k3.py) formats: object members in document order (a
// repeated key keeps its first position and takes its last value, like a
// dict), integers as their digits (any size), other numbers as doubles
// (overflow to ±inf, as float() does). Read with simdjson's On-Demand API,
// whose raw number tokens keep big integers and 1e400 that its DOM refuses.
// Thread-safety: values; parsing keeps no state beyond the call.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k3::tok {

struct JsonValue {
  enum class Kind { Null, Bool, Int, Float, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;  // Float
  std::string text;   // Int: the digits ("-0" is kept as "0"); Float: the literal; String: UTF-8
  std::vector<JsonValue> items;                             // Array
  std::vector<std::pair<std::string, JsonValue>> members;  // Object

  bool isObject() const { return kind == Kind::Object; }
  bool isString() const { return kind == Kind::String; }
  bool isNull() const { return kind == Kind::Null; }
  const JsonValue* find(std::string_view key) const;  // Object member or nullptr

  // Defined out of line: clang-14 with libstdc++ 12 (the fuzz build) cannot
  // define them in-class while `members` holds a pair of this incomplete type.
  JsonValue();
  JsonValue(const JsonValue&);
  JsonValue(JsonValue&&) noexcept;
  JsonValue& operator=(const JsonValue&);
  JsonValue& operator=(JsonValue&&) noexcept;
  ~JsonValue();
};

// Parses one JSON document (RFC 8259; NaN/Infinity literals are not JSON).
// Throws k3::Error(Format) "origin: <what>" when the text is not valid JSON
// or not valid UTF-8.
JsonValue parseJson(std::string_view text, std::string_view origin);

// The same, without throwing: false when `text` is not one valid JSON document.
bool tryParseJson(std::string_view text, JsonValue& out);

const char* jsonKindName(JsonValue::Kind kind);  // "null", "boolean", "integer", …

}  // namespace k3::tok
