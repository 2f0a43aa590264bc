// Writing JSON text (the library reads JSON with simdjson only; writers are
// deterministic string builders): string literals, and JsonObject, the one
// builder the apps and the library's report writers (repack summary, verify
// report, corpus check) use for report objects, flat or nested.
// Thread-safety: free functions are pure; a JsonObject is a value owned by
// one thread.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace k3 {

// Appends `s` as a JSON string literal with ASCII escaping (Python's
// json.dumps default, ensure_ascii=True): control characters, DEL and every
// non-ASCII code point become \uXXXX (surrogate pairs above U+FFFF).
// Invalid UTF-8 bytes are escaped as U+FFFD.
void appendJsonString(std::string& out, std::string_view s);
std::string jsonString(std::string_view s);
// The same with ensure_ascii=False: non-ASCII code points are kept as UTF-8
// (invalid UTF-8 bytes become U+FFFD); only '"', '\\' and C0 controls are escaped.
void appendJsonStringUtf8(std::string& out, std::string_view s);

// Builds one JSON object, fields in the order added. Numbers print as a C++
// stream prints them (integers exactly, doubles with 6 significant digits)
// unless fixed() asks for decimals; strings are escaped by appendJsonString.
// Compact ({"a":1,"b":2}) or, with Spacing::Python, as Python's json.dumps
// separates ({"a": 1, "b": 2}). Nested objects and arrays of objects keep
// their own spacing; only the array's separators follow this object's.
class JsonObject {
 public:
  enum class Spacing { Compact, Python };
  explicit JsonObject(Spacing spacing = Spacing::Compact) : spaced_(spacing == Spacing::Python) {}

  JsonObject& add(std::string_view key, std::string_view text);
  JsonObject& add(std::string_view key, const char* text) { return add(key, std::string_view(text)); }
  JsonObject& add(std::string_view key, const std::string& text) { return add(key, std::string_view(text)); }
  JsonObject& add(std::string_view key, bool value);
  template <std::integral T>
  JsonObject& add(std::string_view key, T value) {
    return raw(key, std::to_string(value));
  }
  JsonObject& add(std::string_view key, double value);
  JsonObject& add(std::string_view key, std::span<const int32_t> ids);  // a JSON array of integers
  JsonObject& add(std::string_view key, const JsonObject& nested);        // a nested object
  JsonObject& add(std::string_view key, std::span<const JsonObject> items);  // a JSON array of objects
  JsonObject& fixed(std::string_view key, double value, int decimals);  // printf("%.*f")
  JsonObject& raw(std::string_view key, std::string_view json);        // already JSON (a nested object)

  // The object's text, "{...}" (no newline).
  std::string str() const { return text_ + "}"; }

 private:
  std::string& next(std::string_view key);
  std::string text_ = "{";
  bool spaced_;
  bool empty_ = true;
};

}  // namespace k3
