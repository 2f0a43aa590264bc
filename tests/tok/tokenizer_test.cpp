// Tokenizer on the real Kimi vocabulary. Expected ids were
// produced by the tiktoken oracle (npm tiktoken@1.0.22, see
// oracle_kimi_test.mjs for the full comparison; chat: chat_encoder_test.cpp), not by this code.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "k3/io/error.h"
#include "k3/tok/tokenizer.h"
#include "support/test_env.h"
#include "tok_test_util.h"

using k3::tok::Tokenizer;
using Ids = std::vector<uint32_t>;

namespace {

const Tokenizer& kimi() {
  static const Tokenizer tok = Tokenizer::fromFiles(k3test::kimiDataDir() + "/tiktoken.model",
                                                     k3test::kimiDataDir() + "/k3_added_tokens.reconstructed.json");
  return tok;
}

}  // namespace

TEST(TokTokenizer, SizesAndSpecials) {
  const Tokenizer& t = kimi();
  EXPECT_EQ(t.numBase(), 163584u);
  EXPECT_EQ(t.vocabSize(), 163840u);
  EXPECT_EQ(t.specialId("<|end_of_msg|>"), 163586u);
  EXPECT_EQ(t.specialId("[BOS]"), 163584u);
  EXPECT_FALSE(t.specialId("<|im_end|>"));
  EXPECT_TRUE(t.isSpecial(163587));
  EXPECT_TRUE(t.isSpecial(163700));
  EXPECT_FALSE(t.isSpecial(163583));
  EXPECT_FALSE(t.isSpecial(163840));
  EXPECT_FALSE(t.hfSpecial(163587));  // <|open|> is "special": false in the config
  EXPECT_TRUE(t.hfSpecial(163586));
  EXPECT_EQ(t.tokenBytes(163700), "<|reserved_token_163700|>");
  EXPECT_EQ(t.tokenBytes(0), "!");
}

TEST(TokTokenizer, EncodesLikeTiktoken) {
  const Tokenizer& t = kimi();
  EXPECT_EQ(t.encode("Hello world"), (Ids{19180, 2695}));
  EXPECT_EQ(t.encode("你好\nKimi"), (Ids{33845, 198, 42, 30223}));
  EXPECT_EQ(t.encode("getUserName iPhone HTTPServer 12345 々〇、"),
            (Ids{618, 3479, 1263, 1032, 11868, 73374, 4022, 220, 6694, 2899, 220, 106101, 91894, 343}));
  EXPECT_EQ(t.encode("I'M naïve 👨‍👩‍👧‍👦"),
            (Ids{40, 103645, 7915, 44187, 367, 130732, 101, 67963, 64390, 102, 67963, 64390, 100, 67963, 64390, 99}));
  EXPECT_EQ(t.encode("\r\n\r\n  x  "), (Ids{2298, 220, 1288, 256}));
  EXPECT_EQ(t.encode(""), Ids{});
}

TEST(TokTokenizer, SpecialTokensOnlyWhenAllowed) {
  const Tokenizer& t = kimi();
  EXPECT_EQ(t.encode("<|open|>x"), (Ids{27, 91, 4454, 91, 29, 87}));
  EXPECT_EQ(t.encode("<|open|>x", true), (Ids{163587, 87}));
}

TEST(TokTokenizer, DecodeIsByteExactEvenWhenTokensSplitCharacters) {
  const Tokenizer& t = kimi();
  std::string s = "I'M naïve 👨‍👩‍👧‍👦 <|open|>";
  EXPECT_EQ(t.decode(t.encode(s)), s);
  EXPECT_EQ(t.decode(t.encode(s, true)), s);
  Ids family = t.encode("👨");
  ASSERT_GT(family.size(), 1u);  // 4 bytes over several tokens
  std::string part = t.decode(std::span(family).first(1));
  EXPECT_EQ(part, std::string("👨").substr(0, part.size()));
  EXPECT_THROW(t.decode(Ids{163840}), k3::Error);
  EXPECT_THROW(t.tokenBytes(999999), k3::Error);
  std::string invalid = "a\xff\xfe" "b";
  EXPECT_EQ(t.decode(t.encode(invalid)), invalid);
}

TEST(TokTokenizer, FromDirectoryWithAndWithoutConfig) {
  namespace fs = std::filesystem;
  std::string dir = k3test::freshDir("tok-dir");
  k3test::writeFile(dir + "/tiktoken.model", k3test::tinyModelText({"ab", "<|open|>x"}));
  Tokenizer bare = Tokenizer::fromDirectory(dir);
  EXPECT_EQ(bare.numBase(), 258u);
  EXPECT_EQ(bare.specialId("<|reserved_token_258|>"), 258u);
  EXPECT_FALSE(bare.specialId("<|open|>"));
  k3test::writeFile(dir + "/tokenizer_config.json", R"({"added_tokens_decoder": {"261": {"content": "<|open|>"}}})");
  Tokenizer named = Tokenizer::fromDirectory(dir);
  EXPECT_EQ(named.specialId("<|open|>"), 261u);
  EXPECT_EQ(named.encode("<|open|>x", true), (Ids{261, 'x'}));
  // Plain text: pieces "<|", "open", "|>", "x", none of them a rank.
  EXPECT_EQ(named.encode("<|open|>x"), (Ids{'<', '|', 'o', 'p', 'e', 'n', '|', '>', 'x'}));
  EXPECT_THROW(Tokenizer::fromDirectory(dir + "/missing"), k3::Error);
}

// encodeAppendUpTo (the server's prompt cap): the full encoding when it fits
// the limit, else false with a prefix of it; reference = encode() of the whole text.
TEST(TokTokenizer, EncodeUpToALimitAgreesWithTheWholeEncoding) {
  const Tokenizer& t = kimi();
  const std::vector<std::string> texts = {
      "Hello world, this is a test of 2024 numbers and   spaces\n\nnew lines",
      "日本語のテキストと English mixed 😀 emoji <|open|>special<|close|> text",
      std::string(3000, 'a') + " tail",  // one piece far longer than any token
  };
  for (const std::string& text : texts) {
    for (bool special : {false, true}) {
      const Ids whole = t.encode(text, special);
      for (size_t limit : {size_t{0}, size_t{1}, size_t{3}, whole.size() - 1, whole.size(), whole.size() + 4}) {
        Ids out = {42};  // appends after what is there
        const bool fits = t.encodeAppendUpTo(text, special, out, limit + 1);
        EXPECT_EQ(fits, whole.size() <= limit) << text.substr(0, 20) << " limit " << limit;
        ASSERT_LE(out.size() - 1, whole.size());
        EXPECT_TRUE(std::equal(out.begin() + 1, out.end(), whole.begin())) << "a prefix of the whole encoding";
        if (fits) {
          EXPECT_EQ(out.size() - 1, whole.size());
        }
      }
    }
  }
  // 8 MiB in one piece against a limit of 1024: refused without encoding the piece.
  Ids out;
  EXPECT_FALSE(t.encodeAppendUpTo(std::string(8u << 20, 'x'), false, out, 1024));
  EXPECT_LE(out.size(), 1025u);
}
