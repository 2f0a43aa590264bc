// tests/support/text_shape.h, the matcher the tool-message tests use in place
// of std::regex: each expectation is what the equivalent regex says.
#include <gtest/gtest.h>

#include "support/text_shape.h"

namespace {

using k3test::hasCountNote;
using k3test::matchShape;
using Caps = std::vector<std::string>;

TEST(TextShape, CapturesDigitsAndAnyTextInOrder) {
  // "k: (.*): (\d+) shards \((\d+) done\), \d+\.\d\d s\n"
  const auto m = matchShape("k: /a/b: c: 12 shards (3 done), 0.25 s\n", "k: {*}: {n} shards ({n} done), {s} s\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (Caps{"/a/b: c", "12", "3"}));  // the path may hold ": " itself
  EXPECT_EQ(*matchShape("", ""), Caps{});
  EXPECT_EQ(*matchShape("x", "{*}x"), Caps{""});
}

TEST(TextShape, TheWholeTextMustMatch) {
  EXPECT_FALSE(matchShape("12 shards\nmore", "{n} shards\n"));
  EXPECT_FALSE(matchShape("a 12", "{n}"));
  EXPECT_FALSE(matchShape("12 shards", "{n} shards\n"));
  EXPECT_FALSE(matchShape("ab\ncd", "{*}cd"));  // {*} stops at a newline, as regex '.'
  EXPECT_TRUE(matchShape("ab\ncd", "{*}\ncd"));
}

TEST(TextShape, DigitsAndSecondsAreStrict) {
  EXPECT_FALSE(matchShape(" shards", "{n} shards"));  // one digit at least
  EXPECT_FALSE(matchShape("1a", "{n}a{n}"));
  EXPECT_EQ(*matchShape("123", "{n}3"), Caps{"12"});  // backtracks like \d+
  EXPECT_TRUE(matchShape("10.25 s", "{s} s"));
  EXPECT_FALSE(matchShape("10.2 s", "{s} s"));
  EXPECT_FALSE(matchShape("10.253 s", "{s} s"));
  EXPECT_FALSE(matchShape(".25 s", "{s} s"));
  EXPECT_FALSE(matchShape("10,25 s", "{s} s"));
}

TEST(TextShape, CountNoteIsFoundAnywhere) {
  EXPECT_TRUE(hasCountNote("  --spread TEXT args(1x) x"));
  EXPECT_TRUE(hasCountNote("(x) (12x)"));
  EXPECT_FALSE(hasCountNote("(x) (1 x) (1y) 2x) (x)"));
  EXPECT_FALSE(hasCountNote("(12"));
}

}  // namespace
