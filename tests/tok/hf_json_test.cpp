// tokenizer.json generation (spec 7.2 + merges), the byte-level alphabet, and
// the text helpers of k3-tokgen. Agreement with HF tokenizers itself is
// checked by oracle_*_test.mjs.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "k3/io/error.h"
#include "k3/io/json_text.h"
#include "k3/tok/byte_level.h"
#include "k3/tok/corpus_check.h"
#include "k3/tok/hf_tokenizer_json.h"
#include "k3/tok/id_list_input.h"
#include "k3/tok/id_text.h"
#include "support/test_env.h"
#include "tok_test_util.h"

using k3::tok::Tokenizer;

namespace {
Tokenizer tiny(const std::vector<std::string>& extra) {
  return Tokenizer(k3test::tinyVocab(extra), k3::tok::AddedTokens::reserved(256 + extra.size()));
}
}  // namespace

TEST(TokByteLevel, Gpt2Alphabet) {
  k3::tok::ByteLevelAlphabet a;
  EXPECT_EQ(a.codePoint('!'), U'!');
  EXPECT_EQ(a.codePoint(0x00), 0x100u);
  EXPECT_EQ(a.codePoint(' '), 0x120u);  // "Ġ"
  EXPECT_EQ(a.codePoint('\n'), 0x10Au);  // "Ċ"
  EXPECT_EQ(a.codePoint(0x7F), 0x121u);
  EXPECT_EQ(a.codePoint(0xAD), 0x143u);  // the 68th remapped byte
  EXPECT_EQ(a.codePoint(0xA1), 0xA1u);
  EXPECT_EQ(a.encode(" hi"), "\xC4\xA0hi");
}

TEST(TokHfJson, MergesFollowRankOrderOverAllReachableSplits) {
  // ab=256 bc=257 abc=258 xyz=259 (unreachable) "a b" order per token rank.
  Tokenizer t = tiny({"ab", "bc", "abc", "xyz"});
  auto merges = k3::tok::rankOrderedMerges(t.vocab());
  ASSERT_EQ(merges.size(), 4u);
  EXPECT_EQ(merges[0].result, 256u);
  EXPECT_EQ(merges[1].result, 257u);
  // abc: split at 1 (a + bc) before split at 2 (ab + c).
  EXPECT_EQ(merges[2].left, uint32_t('a'));
  EXPECT_EQ(merges[2].right, 257u);
  EXPECT_EQ(merges[3].left, 256u);
  EXPECT_EQ(merges[3].right, uint32_t('c'));
}

TEST(TokHfJson, AHostile300KbTokenCostsLinearTime) {
  // Before the length filter: 16 s (every split hashed both halves).
  const std::string longToken(300000, 'q');
  Tokenizer t = tiny({"ab", "bc", "abc", longToken, "qq"});
  const auto t0 = std::chrono::steady_clock::now();
  auto merges = k3::tok::rankOrderedMerges(t.vocab());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 1.0);
  // The same merges as without the long token (it has no split into two tokens).
  ASSERT_EQ(merges.size(), 5u);
  EXPECT_EQ(merges.back().result, 260u);  // qq = q + q
  EXPECT_EQ(merges.back().left, uint32_t('q'));
}

// The hashed split search against the plain definition (every split of every
// token into two reachable tokens, by rank then position) on a random
// vocabulary with many overlapping tokens.
TEST(TokHfJson, MergesEqualTheBruteForceDefinitionOnARandomVocabulary) {
  std::vector<std::string> extra;
  std::set<std::string> seen;
  uint64_t x = 12345;
  auto next = [&] { return x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33; };
  while (extra.size() < 3000) {
    std::string t;
    const size_t len = 2 + next() % 7;
    for (size_t i = 0; i < len; ++i) t.push_back("abcd"[next() % 4]);
    if (seen.insert(t).second) extra.push_back(t);
  }
  Tokenizer tok = tiny(extra);
  const k3::tok::Vocab& v = tok.vocab();
  // Brute force: reachability by length, splits by hashing each half.
  std::vector<uint32_t> order(v.size());
  for (uint32_t r = 0; r < v.size(); ++r) order[r] = r;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return v.bytes(a).size() < v.bytes(b).size(); });
  std::vector<bool> reach(v.size());
  std::vector<k3::tok::Merge> want;
  for (uint32_t r : order) {
    const std::string_view t = v.bytes(r);
    if (t.size() == 1) reach[r] = true;
    for (size_t k = 1; k < t.size(); ++k) {
      const uint32_t a = v.rank(t.substr(0, k)), b = v.rank(t.substr(k));
      if (a == k3::tok::kNoRank || b == k3::tok::kNoRank || !reach[a] || !reach[b]) continue;
      reach[r] = true;
      want.push_back({a, b, r});
    }
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& p, const auto& q) { return p.result < q.result; });
  const auto got = k3::tok::rankOrderedMerges(v);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_GT(got.size(), 3000u);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(got[i].left == want[i].left && got[i].right == want[i].right && got[i].result == want[i].result) << i;
}

TEST(TokIdList, OneGrammarWithOffsetsAndTheVocabulary) {
  using k3::tok::parseIds;
  EXPECT_EQ(parseIds("1,2 3\n[4, 5]"), (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(parseIds(""), std::vector<uint32_t>{});
  auto message = [](std::string_view text, uint64_t vocab = 0) {
    try {
      parseIds(text, "--ids", vocab);
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("1,,2"), "--ids: empty token id before the comma at offset 2");
  EXPECT_EQ(message(",1"), "--ids: empty token id before the comma at offset 0");
  EXPECT_EQ(message("1,2,"), "--ids: empty token id after the last comma");
  EXPECT_EQ(message("[1,]"), "--ids: empty token id after the comma before offset 3");
  EXPECT_EQ(message("1 x"), "--ids: unexpected character 'x' at offset 2");
  EXPECT_EQ(message("1\x01"), "--ids: unexpected character '\\x01' at offset 1");
  EXPECT_EQ(message("4294967295"), "no error");
  EXPECT_EQ(message("4294967296"), "--ids: token id at offset 0 is too large");
  EXPECT_EQ(message("5 10", 10), "--ids: token id 10 at offset 2 is outside the vocabulary [0, 10)");
  EXPECT_EQ(message("9", 10), "no error");
}

TEST(TokHfJson, ValidDeterministicJsonWithSpecFields) {
  Tokenizer t = tiny({"ab", " a", "\"\\"});
  k3::tok::HfJsonStats stats;
  std::string a = k3::tok::buildHfTokenizerJson(t, &stats);
  EXPECT_EQ(a, k3::tok::buildHfTokenizerJson(t));
  EXPECT_EQ(stats.vocab, 259u);
  EXPECT_EQ(stats.merges, 3u);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.parse(a);
  EXPECT_EQ(std::string_view(root["model"]["type"]), "BPE");
  EXPECT_TRUE(bool(root["model"]["ignore_merges"]));
  EXPECT_EQ(int64_t(root["model"]["vocab"]["\xC4\xA0" "a"]), 257);  // " a" -> "Ġa"
  EXPECT_EQ(int64_t(root["model"]["vocab"]["\"\\"]), 258);
  EXPECT_EQ(std::string_view(root["model"]["merges"].at(1)), "\xC4\xA0 a");
  EXPECT_EQ(simdjson::dom::array(root["added_tokens"]).size(), 256u);
  EXPECT_EQ(std::string_view(root["added_tokens"].at(0)["content"]), "<|reserved_token_259|>");
  EXPECT_EQ(std::string_view(root["pre_tokenizer"]["pretokenizers"].at(0)["pattern"]["Regex"]), k3::tok::kKimiPattern);
  EXPECT_EQ(std::string_view(root["decoder"]["type"]), "ByteLevel");
}

TEST(TokIdText, ParseFormatAndUtf8Repair) {
  EXPECT_EQ(k3::tok::parseIds("[1, 2,3]\n4"), (std::vector<uint32_t>{1, 2, 3, 4}));
  EXPECT_THROW(k3::tok::parseIds("1 x"), k3::Error);
  EXPECT_THROW(k3::tok::parseIds("99999999999"), k3::Error);
  EXPECT_EQ(k3::tok::formatIds({1, 2}, true), "[1,2]");
  EXPECT_EQ(k3::tok::formatIds({1, 2}, false), "1 2");
  EXPECT_EQ(k3::tok::toValidUtf8("a\xF0\x9F\x91" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(k3::tok::toValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(k3::tok::toValidUtf8("é👍"), "é👍");
  EXPECT_EQ(k3::tok::decodeJson("\"\n"), "{\"text\": \"\\\"\\n\"}");
}

TEST(TokCorpusCheck, CountsMatchesAndReportsMismatches) {
  Tokenizer t = tiny({"ab"});
  std::string dir = k3test::freshDir("tok-check");
  k3test::writeFile(dir + "/c.jsonl",
                    "\"plain\"\n"
                    "{\"text\": \"ab\", \"ids\": [256]}\n"
                    "{\"text\": \"ab\", \"ids\": [97, 98]}\n"
                    "\n"
                    "{\"text\": \"<|reserved_token_257|>\", \"ids\": [257], \"allow_special\": true}\n");
  k3::tok::CheckReport r = k3::tok::checkCorpus(t, dir + "/c.jsonl");
  EXPECT_EQ(r.lines, 4u);
  EXPECT_EQ(r.withIds, 3u);
  EXPECT_EQ(r.idsMatched, 2u);
  EXPECT_EQ(r.roundTrips, 4u);
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].line, 3u);
  // The report's exact bytes (scripts parse it): spaced fields, compact id arrays.
  EXPECT_EQ(k3::tok::checkReportJson(r),
            "{\"corpus\": " + k3::jsonString(dir + "/c.jsonl") +
                ", \"lines\": 4, \"with_ids\": 3, \"ids_matched\": 2, \"round_trips\": 4, \"failures\": "
                "[{\"line\": 3, \"round_trip_failed\": false, \"expected\": [97,98], \"actual\": [256]}]}\n");
}
