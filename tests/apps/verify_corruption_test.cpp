// k3-verify catches corruption: ≥ 200 random single-byte flips in expert
// payloads, each found by --full and attributed to the right expert (layer,
// id) taken from the shard headers; and byte changes anywhere in a shard
// header (length prefix and JSON), each found by the fast mode and naming the shard.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "apps/container_fixture.h"
#include "apps/verify_test_support.h"

namespace {

using namespace k3test::container;

TEST(VerifyCorruption, ExpertByteFlipsFoundByFullAndNamed) {
  const std::string dst = k3test::freshDir("flips") + "/c";
  copyDir(tinyContainer(4), dst);
  const auto experts = expertTensors(dst);
  ASSERT_GT(experts.size(), 100u);
  std::mt19937_64 rng(20261130);
  std::set<std::pair<int, int>> hit;
  constexpr int kFlips = 210;
  for (int i = 0; i < kFlips; ++i) {
    const ExpertTensorAt& t = experts[rng() % experts.size()];
    const uint64_t at = t.begin + rng() % (t.end - t.begin);
    const uint8_t was = readByte(t.path, at);
    const uint8_t mask = static_cast<uint8_t>(1u << (rng() % 8));
    writeByte(t.path, at, static_cast<uint8_t>(was ^ mask));
    VerifyOutcome v = verifyJson({dst, "--full", "--threads", "2"});
    writeByte(t.path, at, was);
    ASSERT_EQ(v.exitCode, 1) << "flip " << i << " at " << t.file << ":" << at << " (" << t.name << ")\n" << v.raw;
    int named = 0, others = 0;
    for (const auto& p : v.problems) {
      if (p.kind != "hash") continue;
      if (p.layer < 0) {
        EXPECT_EQ(p.shard, t.file) << p.line;  // the shard digest, of the right shard
        continue;
      }
      if (p.layer == t.layer && p.expert == t.id && p.shard == t.file) ++named;
      else ++others;
    }
    EXPECT_EQ(named, 1) << "flip " << i << " in " << t.name << "\n" << v.raw;
    EXPECT_EQ(others, 0) << "flip " << i << " blamed another expert\n" << v.raw;
    hit.insert({t.layer, t.id});
  }
  EXPECT_GT(hit.size(), 50u);  // spread over many experts
  VerifyOutcome clean = verifyJson({dst, "--full"});
  EXPECT_EQ(clean.exitCode, 0) << clean.raw;  // every flip was undone
}

TEST(VerifyCorruption, EveryHeaderByteChangeFoundWithoutFull) {
  const std::string dst = k3test::freshDir("headers") + "/c";
  copyDir(tinyContainer(8), dst);
  const auto regions = headerRegions(dst);
  ASSERT_FALSE(regions.empty());
  std::mt19937_64 rng(7);
  int runs = 0;
  for (const auto& r : regions) {
    std::vector<uint64_t> positions;
    for (uint64_t b = 0; b < 8; ++b) positions.push_back(b);  // the whole length prefix
    for (int k = 0; k < 40; ++k) positions.push_back(8 + rng() % (r.bytes - 8));
    positions.push_back(r.bytes - 1);  // last padding / closing byte
    for (uint64_t at : positions) {
      const uint8_t was = readByte(r.path, at);
      const uint8_t now = static_cast<uint8_t>(was ^ (1 + rng() % 255));
      writeByte(r.path, at, now);
      VerifyOutcome v = verifyJson({dst});
      writeByte(r.path, at, was);
      ++runs;
      ASSERT_EQ(v.exitCode, 1) << r.file << " byte " << at << " " << int(was) << "->" << int(now) << "\n" << v.raw;
      // Structure/number changes are header problems; a changed tensor name
      // shows as an unexpected tensor + index mismatch: either way the shard is named.
      bool named = false;
      for (const auto& p : v.problems) named = named || p.shard == r.file;
      EXPECT_TRUE(named) << r.file << " byte " << at << ": no problem names the shard\n" << v.raw;
    }
  }
  EXPECT_GE(runs, 300);
  EXPECT_EQ(verifyJson({dst}).exitCode, 0);
}

}  // namespace
