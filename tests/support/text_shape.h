// Matching a tool's output line against its expected shape without
// std::regex (GCC 12 warns falsely inside <regex> under the sanitizers, and
// the header is slow to compile). A shape is literal text with placeholders:
//   {n}  one or more decimal digits (captured)
//   {s}  seconds as printed: digits, '.', two digits (not captured)
//   {*}  any text without a newline, possibly empty (captured)
// The whole text must match.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3test {

// The texts the {n} and {*} placeholders took, in order; nullopt when the
// text does not have the shape.
std::optional<std::vector<std::string>> matchShape(std::string_view text, std::string_view shape);

// True when some run of `text` is "(" digits "x)" (CLI11's "args(1x)" note).
bool hasCountNote(std::string_view text);

}  // namespace k3test
