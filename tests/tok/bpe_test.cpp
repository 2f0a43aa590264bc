// Rank BPE (spec 7.4) on hand-made vocabularies, expectations worked out by
// hand; long pieces (heap path) against a naive reference written from the spec.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "k3/tok/bpe.h"
#include "tok_test_util.h"

using k3::tok::Vocab;
using Ids = std::vector<uint32_t>;

namespace {

Ids bpe(const Vocab& v, const std::string& piece) {
  Ids out;
  k3::tok::bytePairEncode(v, piece, out);
  return out;
}

// Spec 7.4 literally: symbols as strings, merge the lowest-rank adjacent
// concatenation, leftmost on ties.
Ids reference(const Vocab& v, const std::string& piece) {
  if (v.rank(piece) != k3::tok::kNoRank) return {v.rank(piece)};
  std::vector<std::string> sym;
  for (char c : piece) sym.emplace_back(1, c);
  for (;;) {
    uint32_t best = k3::tok::kNoRank;
    size_t at = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      uint32_t r = v.rank(sym[i] + sym[i + 1]);
      if (r < best) best = r, at = i;
    }
    if (best == k3::tok::kNoRank) break;
    sym[at] += sym[at + 1];
    sym.erase(sym.begin() + static_cast<long>(at) + 1);
  }
  Ids out;
  for (auto& s : sym) out.push_back(v.rank(s));
  return out;
}

}  // namespace

TEST(TokBpe, MergesLowestRankFirst) {
  // ab=256 bc=257 abc=258 cd=259: "abcd" -> [ab,c,d] -> [abc,d]; "abcd" is no token.
  Vocab v = k3test::tinyVocab({"ab", "bc", "abc", "cd"});
  EXPECT_EQ(bpe(v, "abcd"), (Ids{258, 'd'}));
  // bc=256 ab=257: "abc" is a token, so the whole piece wins.
  Vocab w = k3test::tinyVocab({"bc", "ab", "abc"});
  EXPECT_EQ(bpe(w, "abc"), (Ids{258}));
  // Without "abc": bc (256) merges before ab (257) -> [a, bc].
  Vocab x = k3test::tinyVocab({"bc", "ab"});
  EXPECT_EQ(bpe(x, "abc"), (Ids{'a', 256}));
}

TEST(TokBpe, LeftmostOnTies) {
  // aa=256: "aaa" -> [aa, a] (leftmost), "aaaa" -> [aa, aa].
  Vocab v = k3test::tinyVocab({"aa"});
  EXPECT_EQ(bpe(v, "aaa"), (Ids{256, 'a'}));
  EXPECT_EQ(bpe(v, "aaaa"), (Ids{256, 256}));
}

TEST(TokBpe, WholePieceOnlyTokenIsNotReachedInsideLongerPieces) {
  // xyz=256 has no two-token split: only a whole piece "xyz" gives it.
  Vocab v = k3test::tinyVocab({"xyz"});
  EXPECT_EQ(bpe(v, "xyz"), (Ids{256}));
  EXPECT_EQ(bpe(v, "xyzx"), (Ids{'x', 'y', 'z', 'x'}));
}

TEST(TokBpe, SingleBytesAndHighBytes) {
  Vocab v = k3test::tinyVocab({});
  EXPECT_EQ(bpe(v, "\xff"), (Ids{255}));
  EXPECT_EQ(bpe(v, std::string("\x00\x01", 2)), (Ids{0, 1}));
}

TEST(TokBpe, LongPiecesMatchTheReference) {
  // Random vocabularies over a 4-letter alphabet, pieces past the 128-byte
  // switch to the heap merger, in any rank order.
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::string> extra;
    std::set<std::string> seen;
    while (extra.size() < 60) {
      std::string t;
      size_t len = 2 + rng() % 5;
      for (size_t i = 0; i < len; ++i) t.push_back("abcd"[rng() % 4]);
      if (seen.insert(t).second) extra.push_back(t);
    }
    Vocab v = k3test::tinyVocab(extra);
    for (size_t len : {3u, 50u, 129u, 300u, 1000u}) {
      std::string piece;
      for (size_t i = 0; i < len; ++i) piece.push_back("abcd"[rng() % 4]);
      EXPECT_EQ(bpe(v, piece), reference(v, piece)) << "round " << round << " len " << len;
    }
  }
}
