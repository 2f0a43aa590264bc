// Kimi pre-tokenizer (spec 7.3): splits derived by hand from the regex
// semantics (leftmost alternative, greedy with backtracking), incl. the
// golden cases of ENVIRONMENT_AND_STYLE.md §3.1. Every case runs through both
// the hand-written matcher and the PCRE2 one, which must agree.
#include <gtest/gtest.h>

#include <simdjson.h>

#include "k3/tok/pretokenizer.h"
#include "k3/tok/regex_pretokenizer.h"
#include "support/test_env.h"

using Pieces = std::vector<std::string>;

namespace {
const k3::tok::RegexPreTokenizer& regex() {
  static const k3::tok::RegexPreTokenizer r;
  return r;
}
Pieces split(const std::string& s) {
  Pieces hand = k3::tok::PreTokenizer().splitToStrings(s);
  EXPECT_EQ(hand, regex().splitToStrings(s)) << "PCRE2 and hand-written matchers disagree";
  return hand;
}
}  // namespace

TEST(TokPreTokenizer, CaseAwareLetterRuns) {
  EXPECT_EQ(split("getUserName"), (Pieces{"get", "User", "Name"}));
  EXPECT_EQ(split(" iPhone"), (Pieces{" i", "Phone"}));
  EXPECT_EQ(split("HTTPServer"), (Pieces{"HTTPServer"}));
  EXPECT_EQ(split("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("ABC"), (Pieces{"ABC"}));
}

TEST(TokPreTokenizer, Contractions) {
  EXPECT_EQ(split("I'M"), (Pieces{"I'M"}));
  EXPECT_EQ(split("don't"), (Pieces{"don't"}));
  EXPECT_EQ(split("THEY'LL go"), (Pieces{"THEY'LL", " go"}));
  EXPECT_EQ(split("it'S"), (Pieces{"it'S"}));
  EXPECT_EQ(split("'s"), (Pieces{"'s"}));          // A with the apostrophe as prefix
  EXPECT_EQ(split("x'z"), (Pieces{"x", "'z"}));    // not a contraction: prefix of A
}

TEST(TokPreTokenizer, DigitsInRunsOfAtMostThree) {
  EXPECT_EQ(split("12345"), (Pieces{"123", "45"}));
  EXPECT_EQ(split("a1234567b"), (Pieces{"a", "123", "456", "7", "b"}));
}

TEST(TokPreTokenizer, HanIsScriptNotScriptExtensions) {
  // 々 U+3005 and 〇 U+3007 are Script=Han; 、 U+3001 only has Han in scx.
  EXPECT_EQ(split("漢字々〇、"), (Pieces{"漢字々〇", "、"}));
  EXPECT_EQ(split("中文English"), (Pieces{"中文", "English"}));
  EXPECT_EQ(split("漢'S"), (Pieces{"漢", "'S"}));
}

TEST(TokPreTokenizer, WhitespaceRules) {
  EXPECT_EQ(split("x   y"), (Pieces{"x", "  ", " y"}));               // F then prefix space
  EXPECT_EQ(split("x   "), (Pieces{"x", "   "}));                      // run to end of text
  EXPECT_EQ(split("a\r\n\r\nb"), (Pieces{"a", "\r\n\r\n", "b"}));      // E
  EXPECT_EQ(split("a \n\n b"), (Pieces{"a", " \n\n", " b"}));           // E ends after last newline
  EXPECT_EQ(split("hello!!!\n\nworld"), (Pieces{"hello", "!!!\n\n", "world"}));  // D keeps newlines
  EXPECT_EQ(split("x\t\ty"), (Pieces{"x", "\t", "\ty"}));
}

TEST(TokPreTokenizer, NextLineIsWhitespaceAsInRust) {
  // U+0085 is White_Space (Rust \s) but not in PCRE2's UCP \s. As whitespace
  // the first NEL is rule F and the second a prefix of "b"; as punctuation
  // both would form one D piece.
  EXPECT_EQ(split("a\xc2\x85\xc2\x85" "b"), (Pieces{"a", "\xc2\x85", "\xc2\x85" "b"}));
}

TEST(TokPreTokenizer, InvalidUtf8BecomesGapPieces) {
  EXPECT_EQ(split("ab\xff" "cd"), (Pieces{"ab", "\xff", "cd"}));
}

TEST(TokPreTokenizer, VeryLongRunsDoNotExhaustTheStack) {
  // "A"*n: rule A backtracks through all n letters before rule B takes them.
  std::string upper(300000, 'A');
  EXPECT_EQ(split(upper), (Pieces{upper}));
  std::string lower(300000, 'q');
  EXPECT_EQ(split(lower), (Pieces{lower}));
}

TEST(TokPreTokenizer, PiecesConcatenateToInput) {
  std::string s = "Привет, мир! 👨‍👩‍👧‍👦 x² ١٢٣ \t\r\n end";
  std::string joined;
  for (const auto& p : split(s)) joined += p;
  EXPECT_EQ(joined, s);
}

TEST(TokPreTokenizer, HandWrittenEqualsPcre2OnTheCorpus) {
  simdjson::padded_string json = simdjson::padded_string::load(k3test::sourceDir() + "/tests/tok/corpus.jsonl");
  simdjson::dom::parser parser;
  std::string_view all(json.data(), json.size());
  size_t lines = 0;
  for (size_t pos = 0; pos < all.size();) {
    size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    std::string_view line = all.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    std::string_view text = parser.parse(line.data(), line.size()).get_string();
    ASSERT_EQ(k3::tok::PreTokenizer().splitToStrings(text), regex().splitToStrings(text)) << text;
    ++lines;
  }
  EXPECT_GE(lines, 500u);
}
