// The JSON string writers against Python's json.dumps (expected strings
// below were printed by /usr/bin/python3 json.dumps, both ensure_ascii modes).
#include <gtest/gtest.h>

#include <string>

#include "k3/io/json_text.h"

namespace {

std::string utf8(std::string_view s) {
  std::string out;
  k3::appendJsonStringUtf8(out, s);
  return out;
}

TEST(JsonTextUtf8, EscapesOnlyQuotesBackslashAndControls) {
  EXPECT_EQ(utf8("plain"), "\"plain\"");
  EXPECT_EQ(utf8("quote\" back\\ slash"), "\"quote\\\" back\\\\ slash\"");
  EXPECT_EQ(utf8("tab\tnl\ncr\rbs\bff\f"), "\"tab\\tnl\\ncr\\rbs\\bff\\f\"");
  EXPECT_EQ(utf8("\x01\x1f\x7f"), "\"\\u0001\\u001f\x7f\"");
  EXPECT_EQ(utf8("h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA6\x9C"), "\"h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA6\x9C\"");
  EXPECT_EQ(utf8("\xE2\x80\xA8"), "\"\xE2\x80\xA8\"");  // U+2028 stays raw, as in Python
}

TEST(JsonTextUtf8, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(utf8("a\xFF" "b"), "\"a\xEF\xBF\xBD" "b\"");
  EXPECT_EQ(utf8("\xE4\xBD"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(utf8("\xEF\xBF\xBD"), "\"\xEF\xBF\xBD\"");  // a literal U+FFFD is kept
}

TEST(JsonTextAscii, MatchesEnsureAsciiTrue) {
  EXPECT_EQ(k3::jsonString("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(k3::jsonString("h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\xA6\x9C"),
            "\"h\\u00e9llo \\u4f60\\u597d \\ud83e\\udd9c\"");
}

}  // namespace
