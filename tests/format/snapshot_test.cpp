// Snapshot on the synthetic tiny K3: config, prefix, text vs vision shards,
// output naming (spec §5.6 generalised), source identity.
#include <gtest/gtest.h>

#include <string>

#include "k3/format/snapshot.h"
#include "k3/io/sha256.h"
#include "support/test_env.h"

namespace {

TEST(Snapshot, OpensTinySynth) {
  const std::string dir = k3test::synthSnapshot("tiny", 1);
  const k3::Snapshot s = k3::Snapshot::open(dir);
  const int L = s.config().numLayers;
  EXPECT_EQ(s.prefix(), "language_model.");
  // One shard per layer plus the embed/head shard hold text; vision shards do not.
  EXPECT_EQ(static_cast<int>(s.textShards().size()), L + 1);
  EXPECT_GT(s.shards().size(), s.textShards().size());
  for (const k3::SourceShard& sh : s.shards()) {
    bool vision = true;
    const k3::SafetensorsFile header = sh.openHeader();
    for (const auto& t : header.tensors())
      vision = vision && (t.name.rfind("vision_tower", 0) == 0 || t.name.rfind("mm_projector", 0) == 0);
    EXPECT_EQ(sh.hasText, !vision) << sh.file;
  }
  EXPECT_EQ(s.outputShardName(2), "model-00002-of-0000" + std::string(L + 1 < 10 ? "0" : "") +
                                      std::to_string(L + 1) + ".safetensors");
  EXPECT_EQ(k3::Snapshot::shardName(94, 94), "model-00094-of-000094.safetensors");
  // Header identity = SHA-256 of the first 8+N bytes, computed independently here.
  const k3::SourceShard& first = s.shards().front();
  const std::string bytes = k3test::readFile(first.path);
  EXPECT_EQ(first.size, bytes.size());
  EXPECT_EQ(first.headerSha256, k3::Sha256::hexOf(bytes.data(), first.openHeader().dataOffset()));
  EXPECT_EQ(s.configSha256(), k3::Sha256::hexOf(s.configText().data(), s.configText().size()));
}

}  // namespace
