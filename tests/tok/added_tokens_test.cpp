// Added tokens from tokenizer_config.json and the reserved-name fallback
// (spec 7.2, SOURCE.md).
#include <gtest/gtest.h>

#include "k3/io/error.h"
#include "k3/tok/added_tokens.h"
#include "support/test_env.h"

using k3::tok::AddedTokens;

TEST(TokAddedTokens, ReservedNamesUseAbsoluteIds) {
  AddedTokens t = AddedTokens::reserved(768);
  ASSERT_EQ(t.all().size(), 256u);
  EXPECT_EQ(t.byId(768)->content, "<|reserved_token_768|>");
  EXPECT_EQ(t.byId(1023)->content, "<|reserved_token_1023|>");
  EXPECT_EQ(t.byId(1024), nullptr);
  EXPECT_EQ(t.byId(767), nullptr);
  EXPECT_EQ(t.find("<|reserved_token_800|>"), 800u);
}

TEST(TokAddedTokens, RealK3ConfigNamesAndFlags) {
  AddedTokens t = AddedTokens::fromConfig(k3test::kimiDataDir() + "/k3_added_tokens.reconstructed.json", 163584);
  EXPECT_EQ(t.find("[BOS]"), 163584u);
  EXPECT_EQ(t.find("<|end_of_msg|>"), 163586u);
  EXPECT_EQ(t.find("<|open|>"), 163587u);
  EXPECT_EQ(t.find("<|close|>"), 163588u);
  EXPECT_EQ(t.find("<|sep|>"), 163589u);
  EXPECT_EQ(t.find("<osagent_mode>"), 163649u);
  EXPECT_EQ(t.find("[PAD]"), 163839u);
  EXPECT_EQ(t.byId(163592)->content, "<|reserved_token_163592|>");
  EXPECT_TRUE(t.byId(163584)->hfSpecial);
  EXPECT_FALSE(t.byId(163587)->hfSpecial);
  EXPECT_FALSE(t.byId(163589)->hfSpecial);
}

TEST(TokAddedTokens, ConfigEdgeCases) {
  // A bare reserved name beyond num_base+256 is skipped (some Kimi configs
  // list 258); a missing "special" defaults to true; no added_tokens_decoder =
  // all reserved.
  AddedTokens t = AddedTokens::fromConfigText(
      R"({"added_tokens_decoder": {"300": {"content": "<|x|>"}, "556": {"content": "<|reserved_token_556|>"}}})", 300,
      "c.json");
  EXPECT_EQ(t.find("<|x|>"), 300u);
  EXPECT_TRUE(t.byId(300)->hfSpecial);
  EXPECT_FALSE(t.find("<|reserved_token_556|>"));
  EXPECT_EQ(t.all().size(), 256u);
  EXPECT_EQ(AddedTokens::fromConfigText("{}", 300, "c.json").byId(301)->content, "<|reserved_token_301|>");
}

TEST(TokAddedTokens, RejectsBadConfigs) {
  auto kindOf = [](const std::string& json) {
    try {
      AddedTokens::fromConfigText(json, 300, "c.json");
    } catch (const k3::Error& e) {
      EXPECT_NE(std::string(e.what()).find("c.json"), std::string::npos);
      return e.kind();
    }
    return k3::ErrorKind::Internal;
  };
  EXPECT_EQ(kindOf("not json"), k3::ErrorKind::Format);
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"299": {"content": "a"}}})"), k3::ErrorKind::Format);  // below num_base
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"x1": {"content": "a"}}})"), k3::ErrorKind::Format);
  // Past the vocabulary: a named token the model could never see, or a
  // reserved name that is not its own id.
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"556": {"content": "<|beyond|>"}}})"), k3::ErrorKind::Format);
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"557": {"content": "<|reserved_token_556|>"}}})"), k3::ErrorKind::Format);
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"9999999999": {"content": "<|x|>"}}})"), k3::ErrorKind::Format);
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"300": {"content": ""}}})"), k3::ErrorKind::Format);
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"300": {"content": "a"}, "301": {"content": "a"}}})"),
            k3::ErrorKind::Format);  // duplicate content
  EXPECT_EQ(kindOf(R"({"added_tokens_decoder": {"300": {"content": "<|reserved_token_301|>"}}})"),
            k3::ErrorKind::Format);  // collides with 301's reserved name
}

TEST(TokAddedTokens, LongestMatchAtPosition) {
  AddedTokens t = AddedTokens::fromConfigText(
      R"({"added_tokens_decoder": {"300": {"content": "<a>"}, "301": {"content": "<a><b>"}}})", 300, "c.json");
  EXPECT_EQ(t.matchAt("x<a><b>", 1)->id, 301u);
  EXPECT_EQ(t.matchAt("x<a><c>", 1)->id, 300u);
  EXPECT_EQ(t.matchAt("x<a><c>", 0), nullptr);
}
