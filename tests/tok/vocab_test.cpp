// tiktoken.model parsing and validation (spec 7.1, issue 4).
#include <gtest/gtest.h>

#include "k3/io/error.h"
#include "k3/tok/vocab.h"
#include "support/test_env.h"
#include "tok_test_util.h"

using k3::ErrorKind;
using k3::tok::Vocab;

namespace {

ErrorKind parseError(const std::string& text) {
  try {
    Vocab::parse(text, "t.model");
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("t.model"), std::string::npos) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error for: " << text.substr(0, 80);
  return ErrorKind::Internal;
}

}  // namespace

TEST(TokBase64, DecodesRfc4648) {
  EXPECT_EQ(k3::tok::decodeBase64("IQ=="), "!");
  EXPECT_EQ(k3::tok::decodeBase64("SGVsbG8="), "Hello");
  EXPECT_EQ(k3::tok::decodeBase64("5L2g5aW9"), "\xe4\xbd\xa0\xe5\xa5\xbd");  // 你好
  EXPECT_EQ(k3::tok::decodeBase64("/w=="), "\xff");
  EXPECT_FALSE(k3::tok::decodeBase64("SGVsbG8"));    // length not a multiple of 4
  EXPECT_FALSE(k3::tok::decodeBase64("SG$sbG8="));   // bad character
  EXPECT_FALSE(k3::tok::decodeBase64("S=Vs"));       // '=' in the middle
  EXPECT_EQ(k3::tok::encodeBase64("Hello"), "SGVsbG8=");
}

TEST(TokVocab, ParsesRanksAndLooksUpBothWays) {
  Vocab v = k3test::tinyVocab({"ab", "abc"});
  ASSERT_EQ(v.size(), 258u);
  EXPECT_EQ(v.rank("ab"), 256u);
  EXPECT_EQ(v.rank("abc"), 257u);
  EXPECT_EQ(v.rank("a"), 97u);
  EXPECT_EQ(v.rank("abcd"), k3::tok::kNoRank);
  EXPECT_EQ(v.bytes(257), "abc");
  EXPECT_EQ(v.byteRank(0xff), 255u);
}

TEST(TokVocab, AcceptsRanksInAnyLineOrderAndBlankLines) {
  std::string text = k3test::tinyModelText({"xy"});
  std::string reordered = "eHk= 256\n\n" + text.substr(0, text.rfind("eHk="));
  Vocab v = Vocab::parse(reordered, "t.model");
  EXPECT_EQ(v.rank("xy"), 256u);
}

TEST(TokVocab, RejectsMalformedFiles) {
  std::string base = k3test::tinyModelText({});
  EXPECT_EQ(parseError(base + "!!!! 256\n"), ErrorKind::Format);          // bad base64
  EXPECT_EQ(parseError(base + "eHk=\n"), ErrorKind::Format);              // no rank
  EXPECT_EQ(parseError(base + "eHk= 25x\n"), ErrorKind::Format);          // bad rank
  EXPECT_EQ(parseError(base + "eHk= 257\n"), ErrorKind::Format);          // gap: 256 missing
  EXPECT_EQ(parseError(base + "eHk= 255\n"), ErrorKind::Format);          // rank repeated
  EXPECT_EQ(parseError(base + "YQ== 256\n"), ErrorKind::Format);          // bytes repeated ("a")
  EXPECT_EQ(parseError(""), ErrorKind::Format);                           // empty
  EXPECT_EQ(parseError("eHk= 0\n"), ErrorKind::Format);                   // single bytes missing
  EXPECT_EQ(parseError(base + "eHk= 99999999999\n"), ErrorKind::Format);  // rank overflow
}

TEST(TokVocab, RealKimiVocabulary) {
  Vocab v = Vocab::load(k3test::kimiDataDir() + "/tiktoken.model");
  EXPECT_EQ(v.size(), 163584u);            // SOURCE.md
  EXPECT_EQ(v.bytes(0), "!");              // "IQ== 0"
  EXPECT_EQ(v.rank(v.bytes(163583)), 163583u);
}

TEST(TokVocab, MissingFileIsMissing) {
  try {
    Vocab::load("/nonexistent/tiktoken.model");
    FAIL();
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Missing);
  }
}
