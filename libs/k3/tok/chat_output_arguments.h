// A generated tool call's arguments, checked and turned into the JSON object
// text OpenAI carries: each OPEN(argument, key=K, type=T) value CLOSE(argument)
// (spec §7.6) becomes one member, keys in generated order, laid out as
// Python's json.dumps(..., ensure_ascii=False) does ({"k": v, "n": 1}).
// String values are raw text (JSON-escaped here); any other value is the
// model's own json.dumps text, kept literally once a JSON parser has accepted
// it as the type T says, so rendering the parsed call again gives the same ids.
// Thread-safety: a ToolArguments is one call's, built as it streams; not
// thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k3/tok/chat_message.h"

namespace k3::tok {

class ToolArguments {
 public:
  explicit ToolArguments(const ToolSpec& tool) : tool_(tool) {}

  // False, with `expected`/`found` set, when T is not one of boolean, null,
  // number, string, object, array; when a non-string value is not one JSON
  // document of type T (NaN and Infinity are not JSON, nor is a number out
  // of double range); or when the key repeats. A T other than the
  // parameter's declared type (or a fraction for an integer) is the model's
  // answer: kept as written and counted in mistyped().
  bool add(std::string_view key, std::string_view type, std::string_view value, std::string& expected,
           std::string& found);
  bool empty() const { return keys_.empty(); }
  size_t mistyped() const { return mistyped_; }
  // The object's text; "{}" when there were no arguments.
  std::string json() const { return keys_.empty() ? "{}" : members_ + "}"; }

 private:
  const ToolSpec& tool_;
  std::vector<std::string> keys_;
  std::string members_;  // "{" then the members so far
  size_t mistyped_ = 0;
};

}  // namespace k3::tok
