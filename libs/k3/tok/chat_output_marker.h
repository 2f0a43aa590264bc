// The inside of an XTML marker as the model generated it: the bytes between
// <|open|> (or <|close|>) and <|sep|>, `tag( key="value")*` (spec §7.6
// OPEN/CLOSE), with attribute values unescaped.
// Thread-safety: values and a pure parser; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace k3::tok {

struct MarkerHeader {
  std::string tag;
  std::vector<std::pair<std::string, std::string>> attrs;  // in generated order, values unescaped

  const std::string* attr(std::string_view key) const;
  // As the parser's messages show it: OPEN(call, tool="f", index="1").
  std::string describe(bool open) const;
};

// An XTML attribute value (spec §7.6): `&` -> `&amp;`, then `"` -> `&quot;`;
// nothing else. The chat encoder and the grammar's call syntax both write it.
std::string escapeAttribute(std::string_view v);

// The inverse of escapeAttribute(): "&quot;" -> '"', then "&amp;" -> '&'
// (one left-to-right pass gives the same result). Any other '&' sequence is
// refused: returns nullopt and sets `badEntity` to the offending text.
std::optional<std::string> unescapeAttribute(std::string_view value, std::string& badEntity);

// Parses `tag( key="value")*`. Tags and keys are non-empty and contain no
// space, '=' or '"'. On failure returns nullopt with `expected`/`found` set.
std::optional<MarkerHeader> parseMarkerHeader(std::string_view bytes, std::string& expected, std::string& found);

}  // namespace k3::tok
