// Parses a request body with simdjson under the server's limits: nesting
// depth bounded, UTF-8 validated (simdjson's default). Failures are 400s.
// Thread-safety: pure; the caller's simdjson parser holds the document, so one
// parser per thread.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace k3::serve {

inline constexpr size_t kDefaultJsonDepth = 64;

// The body's root object; `parser` owns the parsed document.
simdjson::dom::object parseJsonBody(simdjson::dom::parser& parser, std::string_view body, size_t maxDepth);

// Field readers: 400 naming `key` when the value has the wrong type/range.
bool readBool(simdjson::dom::element v, const std::string& key);
double readNumber(simdjson::dom::element v, const std::string& key, double lo, double hi);
int64_t readInteger(simdjson::dom::element v, const std::string& key, int64_t lo, int64_t hi);
std::string readString(simdjson::dom::element v, const std::string& key);

}  // namespace k3::serve
