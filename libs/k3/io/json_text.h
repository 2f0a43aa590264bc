// Small helpers for writing JSON text by hand (the library reads JSON with
// simdjson only; writers are deterministic string builders).
#pragma once

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

}  // namespace k3
