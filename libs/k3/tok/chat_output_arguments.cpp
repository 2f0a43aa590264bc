#include "k3/tok/chat_output_arguments.h"

#include <algorithm>
#include <cmath>

#include "k3/io/json_text.h"
#include "k3/tok/chat_output_error.h"
#include "k3/tok/id_text.h"
#include "k3/tok/json_value.h"

namespace k3::tok {
namespace {

constexpr std::string_view kTypes[] = {"boolean", "null", "number", "string", "object", "array"};

// The JSON type of `text` when it is exactly one JSON document (as Python's
// json.loads reads it: any integer, no NaN/Infinity literals), else "".
// `integral`: a number without fractional part; `finite`: not out of range
// (1e400 would come back from json.dumps as Infinity, which is not JSON).
std::string jsonTypeOf(std::string_view text, bool& integral, bool& finite) {
  JsonValue v;
  if (!tryParseJson(text, v)) return "";
  integral = v.kind == JsonValue::Kind::Int ||
             (v.kind == JsonValue::Kind::Float && std::isfinite(v.number) && std::floor(v.number) == v.number);
  finite = v.kind != JsonValue::Kind::Float || std::isfinite(v.number);
  return v.kind == JsonValue::Kind::Int ? "number" : jsonKindName(v.kind);
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
  bool integral = true;
  if (type != "string") {
    bool finite = true;
    const std::string actual = jsonTypeOf(value, integral, finite);
    if (actual != type || !finite) {
      expected = std::string(type == "number" ? "a finite JSON number" : "a JSON " + std::string(type)) +
                 " as the value of " + where;
      found = quoteSnippet(value) + (actual.empty() ? " (not one JSON value)"
                                     : !finite    ? " (out of range)"
                                                  : " (a JSON " + actual + ")");
      return false;
    }
  }
  // A type other than the declared one is the model's answer, passed on as
  // written (the client's validation answers it); only counted.
  if (known && (type != (declared == "integer" ? "number" : declared) || (declared == "integer" && !integral))) ++mistyped_;
  members_ += keys_.empty() ? "{" : ", ";
  appendJsonStringUtf8(members_, key);
  members_ += ": ";
  if (type == "string") appendJsonStringUtf8(members_, toValidUtf8(value));  // as content text is
  else members_ += value;
  keys_.emplace_back(key);
  return true;
}

}  // namespace k3::tok
