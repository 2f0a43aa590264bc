#include "k3/tok/chat_output_arguments.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "k3/io/json_text.h"
#include "k3/tok/chat_output_error.h"
#include "k3/tok/id_text.h"

namespace k3::tok {
namespace {

constexpr std::string_view kTypes[] = {"boolean", "null", "number", "string", "object", "array"};

// The JSON type of `text` when it is exactly one JSON document, else "" with
// `why` set; `integral` tells whether a number has no fractional part.
std::string jsonTypeOf(std::string_view text, bool& integral, std::string& why) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element e;
  if (auto err = parser.parse(padded).get(e)) {
    why = simdjson::error_message(err);
    return "";
  }
  integral = false;
  switch (e.type()) {
    case simdjson::dom::element_type::ARRAY: return "array";
    case simdjson::dom::element_type::OBJECT: return "object";
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64: integral = true; return "number";
    case simdjson::dom::element_type::DOUBLE: {
      const double d = e.get_double().value_unsafe();
      integral = std::isfinite(d) && std::floor(d) == d;
      return "number";
    }
    case simdjson::dom::element_type::STRING: return "string";
    case simdjson::dom::element_type::BOOL: return "boolean";
    case simdjson::dom::element_type::NULL_VALUE: return "null";
  }
  return "";
}

}  // namespace

bool ToolArguments::add(std::string_view key, std::string_view type, std::string_view value, std::string& expected,
                        std::string& found) {
  const std::string where = "argument " + quoteSnippet(key) + " of " + quoteSnippet(tool_.name);
  if (std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes)) {
    expected = "type boolean, null, number, string, object or array for " + where;
    found = "type=" + quoteSnippet(type);
    return false;
  }
  if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) {
    expected = "each argument key once in a call";
    found = "a second " + where;
    return false;
  }
  std::string_view declared;
  for (const auto& [k, t] : tool_.params)
    if (k == key) declared = t;
  const bool known = std::find(std::begin(kTypes), std::end(kTypes), declared) != std::end(kTypes) || declared == "integer";
  if (known && type != (declared == "integer" ? "number" : declared)) {
    expected = "type=\"" + std::string(declared == "integer" ? "number" : declared) + "\" (declared \"" +
               std::string(declared) + "\" for " + where + ")";
    found = "type=" + quoteSnippet(type);
    return false;
  }
  if (type != "string") {
    bool integral = false;
    std::string why;
    const std::string actual = jsonTypeOf(value, integral, why);
    if (actual != type || (declared == "integer" && !integral)) {
      expected = "a JSON " + std::string(declared == "integer" ? "integer" : type) + " as the value of " + where;
      found = quoteSnippet(value) + (actual.empty() ? " (" + why + ")" : " (a JSON " + actual + ")");
      return false;
    }
  }
  members_ += keys_.empty() ? "{" : ", ";
  appendJsonStringUtf8(members_, key);
  members_ += ": ";
  if (type == "string") appendJsonStringUtf8(members_, toValidUtf8(value));  // as content text is
  else members_ += value;
  keys_.emplace_back(key);
  return true;
}

}  // namespace k3::tok
