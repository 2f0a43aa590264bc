// Spread layout (k3-repack --spread): root paths, part placement, the
// k3-spread-root.json marker, the manifest's roots (format_version 2), the
// index's "<root>/<file>" locations, and resolving the roots of a container.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "k3/format/expert_manifest.h"
#include "k3/format/snapshot_index.h"
#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "support/test_env.h"

namespace {

namespace fs = std::filesystem;
const std::string kHash(64, 'a');

k3::ErrorKind kindOf(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const k3::Error& e) {
    if (what) *what = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error thrown";
  return k3::ErrorKind::Internal;
}

k3::ExpertManifest spreadManifest() {
  k3::ExpertManifest m;
  m.formatVersion = k3::ExpertManifest::kSpreadFormatVersion;
  m.toolVersion = "9.9.9";
  m.settings = {4, 8, 8};
  m.configSha256 = std::string(64, 'c');
  m.numLayers = 3;
  m.numExperts = 4;
  m.expertBytes = 100;
  m.roots = {".", "../d2"};
  k3::ManifestShard a;
  a.file = "model-00002-of-000004.safetensors";
  a.size = 1000;
  a.sha256 = kHash;
  a.dataOffset = 96;
  a.tensors = 20;
  a.source = {"model-00002-of-000006.safetensors", 5000, std::string(64, 'b')};
  a.experts = {{1, 0, 600, 100, std::string(64, '1')}, {1, 1, 700, 100, std::string(64, '2')}};
  a.root = 1;
  k3::ManifestShard b = a;
  b.file = "model-00002-of-000004.part2.safetensors";
  b.experts = {{1, 2, 600, 100, std::string(64, '3')}, {1, 3, 700, 100, std::string(64, '4')}};
  b.root = 0;
  m.shards = {b, a};
  return m;
}

TEST(SpreadLayout, RootPathsAreRelativeDirectories) {
  for (const char* ok : {"../d2", "../../mnt/ssd2/k3", "d2", "../a.b/c"}) EXPECT_TRUE(k3::isSpreadRootPath(ok)) << ok;
  for (const char* bad : {"", ".", "/mnt/d2", "../d2/", "..//d2", "./d2", "../d2/."})
    EXPECT_FALSE(k3::isSpreadRootPath(bad)) << bad;
  EXPECT_FALSE(k3::isSpreadRootPath(std::string("a\0b", 3)));
}

TEST(SpreadLayout, LocationsAndPartNames) {
  EXPECT_EQ(k3::spreadLocation(".", "m.safetensors"), "m.safetensors");
  EXPECT_EQ(k3::spreadLocation("../d2", "m.safetensors"), "../d2/m.safetensors");
  EXPECT_EQ(k3::spreadPartName("model-00002-of-000094.safetensors", 0), "model-00002-of-000094.safetensors");
  EXPECT_EQ(k3::spreadPartName("model-00002-of-000094.safetensors", 1), "model-00002-of-000094.part2.safetensors");
  EXPECT_EQ(k3::spreadPartName("model-00002-of-000094.safetensors", 3), "model-00002-of-000094.part4.safetensors");
  // The inverse, for every part name the builder makes; "" for anything else.
  for (int part = 1; part < 12; ++part)
    EXPECT_EQ(k3::spreadPartShard(k3::spreadPartName("model-00002-of-000094.safetensors", part)),
              "model-00002-of-000094.safetensors");
  for (const char* other : {"model-00002-of-000094.safetensors", "model-00002-of-000094.part.safetensors",
                            "model-00002-of-000094.partX.safetensors", "model-00002-of-000094.part2.json",
                            ".part2.safetensors2", ".safetensors", ""})
    EXPECT_EQ(k3::spreadPartShard(other), "") << other;
}

// Each layer's experts are cut into `parts` contiguous id ranges whose sizes
// differ by at most one, so each drive holds its share of every layer.
TEST(SpreadLayout, PartsAreContiguousBalancedRanges) {
  for (size_t count : {1, 2, 3, 7, 16, 384, 896})
    for (int parts : {1, 2, 3, 4, 8}) {
      std::vector<size_t> sizes(static_cast<size_t>(parts), 0);
      int last = 0;
      for (size_t x = 0; x < count; ++x) {
        const int p = k3::spreadPartOf(x, count, parts);
        ASSERT_GE(p, last) << count << "/" << parts;  // monotone: contiguous ranges
        ASSERT_LT(p, parts);
        last = p;
        ++sizes[static_cast<size_t>(p)];
      }
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1u) << count << " experts over " << parts;
      if (count >= static_cast<size_t>(parts)) {
        EXPECT_GE(*lo, 1u);
      }
    }
}

TEST(SpreadLayout, PartsOfAShardGoToDistinctRootsRotatedPerShard) {
  for (int roots : {2, 3, 5}) {
    std::vector<int> dense(static_cast<size_t>(roots), 0);
    for (int shard = 1; shard <= 3 * roots; ++shard) {
      std::set<int> used;
      for (int part = 0; part < roots; ++part) used.insert(k3::spreadRootOf(shard, part, roots));
      EXPECT_EQ(used.size(), static_cast<size_t>(roots));
      ++dense[static_cast<size_t>(k3::spreadRootOf(shard, 0, roots))];
    }
    for (int n : dense) EXPECT_EQ(n, 3);  // part 0 (dense tensors) rotates evenly
  }
}

TEST(SpreadLayout, ParseSpreadDirs) {
  EXPECT_EQ(k3::parseSpreadDirs("a"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(k3::parseSpreadDirs("/x/a,b/c"), (std::vector<std::string>{"/x/a", "b/c"}));
  for (const char* bad : {"", ",a", "a,", "a,,b"})
    EXPECT_EQ(kindOf([&] { k3::parseSpreadDirs(bad); }), k3::ErrorKind::Usage) << bad;
}

TEST(SpreadLayout, RelativeRootPath) {
  const std::string base = k3test::freshDir("spread-rel");
  fs::create_directories(base + "/dst");
  fs::create_directories(base + "/d2");
  EXPECT_EQ(k3::relativeRootPath(base + "/dst", base + "/d2"), "../d2");
  EXPECT_EQ(k3::relativeRootPath(base + "/dst", base + "/new/d3"), "../new/d3");  // not created yet
  EXPECT_EQ(kindOf([&] { k3::relativeRootPath(base + "/dst", base + "/dst"); }), k3::ErrorKind::Usage);
  EXPECT_EQ(kindOf([&] { k3::relativeRootPath(base + "/dst", base + "/dst/sub"); }), k3::ErrorKind::Usage);
}

TEST(SpreadLayout, MarkerRoundTripAndErrors) {
  const k3::SpreadMarker m = k3::SpreadMarker::forRoot(spreadManifest(), 1);
  EXPECT_EQ(m.root, 1);
  EXPECT_EQ(m.roots, 2);
  EXPECT_EQ(m.configSha256, std::string(64, 'c'));
  EXPECT_EQ(k3::SpreadMarker::parse(m.toJson(), "x"), m);
  for (const char* bad : {"", "[]", "{\"format\": \"k3-container\"}",
                          "{\"format\": \"k3-spread-root\", \"config_sha256\": \"c\"}",
                          "{\"format\": \"k3-spread-root\", \"config_sha256\": \"c\", \"settings\": {\"bits\": 4, "
                          "\"mla_bits\": 8, \"head_bits\": 8}, \"root\": -1, \"roots\": 2}"})
    EXPECT_EQ(kindOf([&] { k3::SpreadMarker::parse(bad, "marker.json"); }), k3::ErrorKind::Format) << bad;
}

TEST(SpreadLayout, ManifestVersion2CarriesRootsAndVersion1DoesNot) {
  const k3::ExpertManifest m = spreadManifest();
  const std::string text = m.toJson();
  EXPECT_NE(text.find("\"format_version\": 2"), std::string::npos);
  EXPECT_NE(text.find("\"roots\": [\".\", \"../d2\"]"), std::string::npos) << text;
  const k3::ExpertManifest back = k3::ExpertManifest::parse(text, "m.json");
  EXPECT_EQ(back.roots, m.roots);
  ASSERT_EQ(back.shards.size(), 2u);
  EXPECT_EQ(back.shards[0].root, 0);
  EXPECT_EQ(back.shards[1].root, 1);
  EXPECT_EQ(back.toJson(), text);
  EXPECT_EQ(back.location(back.shards[0]), "model-00002-of-000004.part2.safetensors");
  EXPECT_EQ(back.location(back.shards[1]), "../d2/model-00002-of-000004.safetensors");
  EXPECT_TRUE(back.sameRun(m));
  k3::ExpertManifest other = m;
  other.roots = {".", "../d3"};
  EXPECT_FALSE(other.sameRun(m));  // a rerun with other --spread directories is another run

  k3::ExpertManifest plain = m;  // one directory: version 1, no roots, no per-shard root
  plain.formatVersion = k3::ExpertManifest::kFormatVersion;
  plain.roots.clear();
  const std::string one = plain.toJson();
  EXPECT_EQ(one.find("roots"), std::string::npos);
  EXPECT_EQ(one.find("\"root\""), std::string::npos);
  EXPECT_EQ(plain.location(plain.shards[1]), "model-00002-of-000004.safetensors");
}

TEST(SpreadLayout, ManifestRefusesBadRoots) {
  const std::string good = spreadManifest().toJson();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  for (const auto& change : std::vector<std::pair<std::string, std::string>>{
           {"\"roots\": [\".\", \"../d2\"]", "\"roots\": [\".\", \"/etc\"]"},
           {"\"roots\": [\".\", \"../d2\"]", "\"roots\": [\"../d2\", \".\"]"},
           {"\"roots\": [\".\", \"../d2\"]", "\"roots\": [\".\"]"},
           {"\"roots\": [\".\", \"../d2\"]", "\"roots\": [\".\", 7]"},
           {"\"roots\": [\".\", \"../d2\"],\n  ", ""},
           {"\"root\": 1", "\"root\": 2"},
           {"\"root\": 1, ", ""}}) {
    std::string what;
    EXPECT_EQ(kindOf([&] { k3::ExpertManifest::parse(replaced(change.first, change.second), "m.json"); }, &what),
              k3::ErrorKind::Format)
        << change.second;
    EXPECT_NE(what.find("m.json"), std::string::npos) << what;
  }
}

TEST(SpreadLayout, IndexLocationsOnlyWhereAllowed) {
  const std::string idx =
      "{\"metadata\": {\"total_size\": 4}, \"weight_map\": {\"a\": \"m.safetensors\", \"b\": \"../d2/n.safetensors\"}}";
  EXPECT_EQ(kindOf([&] { k3::SnapshotIndex::parse(idx, "i.json"); }), k3::ErrorKind::Format);  // snapshots: basenames
  const k3::SnapshotIndex ok = k3::SnapshotIndex::parse(idx, "i.json", k3::SnapshotIndex::ShardNames::SpreadLocations);
  ASSERT_EQ(ok.weightMap.size(), 2u);
  EXPECT_EQ(ok.weightMap[1].second, "../d2/n.safetensors");
  for (const char* bad : {"/abs/n.safetensors", "../d2/", "..", "../d2/../n.safetensors/"}) {
    const std::string t = std::string("{\"weight_map\": {\"a\": \"") + bad + "\"}}";
    EXPECT_EQ(kindOf([&] { k3::SnapshotIndex::parse(t, "i.json", k3::SnapshotIndex::ShardNames::SpreadLocations); }),
              k3::ErrorKind::Format)
        << bad;
  }
}

TEST(SpreadLayout, ResolveRootsChecksDirectoryAndMarker) {
  const std::string base = k3test::freshDir("spread-resolve");
  const std::string dst = base + "/dst", d2 = base + "/d2", other = base + "/other";
  fs::create_directories(dst);
  const k3::ExpertManifest m = spreadManifest();
  std::string what;
  EXPECT_EQ(kindOf([&] { k3::resolveSpreadRoots(dst, m, {}); }, &what), k3::ErrorKind::Missing);
  EXPECT_NE(what.find("spread root 1"), std::string::npos) << what;
  EXPECT_NE(what.find("../d2"), std::string::npos) << what;
  fs::create_directories(d2);
  EXPECT_EQ(kindOf([&] { k3::resolveSpreadRoots(dst, m, {}); }, &what), k3::ErrorKind::Missing);
  EXPECT_NE(what.find(k3::SpreadMarker::kFileName), std::string::npos) << what;
  k3test::writeFile(d2 + "/" + k3::SpreadMarker::kFileName, k3::SpreadMarker::forRoot(m, 1).toJson());
  EXPECT_EQ(k3::resolveSpreadRoots(dst, m, {}), (std::vector<std::string>{dst, dst + "/../d2"}));

  // Moved: the other root is given where it is now.
  fs::create_directories(other);
  fs::copy_file(d2 + "/" + k3::SpreadMarker::kFileName, other + "/" + k3::SpreadMarker::kFileName);
  EXPECT_EQ(k3::resolveSpreadRoots(dst, m, {other}), (std::vector<std::string>{dst, other}));
  EXPECT_EQ(kindOf([&] { k3::resolveSpreadRoots(dst, m, {other, d2}); }), k3::ErrorKind::Usage);

  // Another root's or another container's marker: Mismatch.
  k3::ExpertManifest three = m;
  three.roots = {".", "../d2", "../d3"};
  k3test::writeFile(other + "/" + k3::SpreadMarker::kFileName, k3::SpreadMarker::forRoot(three, 2).toJson());
  EXPECT_EQ(kindOf([&] { k3::resolveSpreadRoots(dst, m, {other}); }, &what), k3::ErrorKind::Mismatch);
  EXPECT_NE(what.find("wrong or swapped"), std::string::npos) << what;
  k3::ExpertManifest bits8 = m;
  bits8.settings.bits = 8;
  k3test::writeFile(other + "/" + k3::SpreadMarker::kFileName, k3::SpreadMarker::forRoot(bits8, 1).toJson());
  EXPECT_EQ(kindOf([&] { k3::resolveSpreadRoots(dst, m, {other}); }), k3::ErrorKind::Mismatch);
}

TEST(SpreadLayout, ShardRootsAndPaths) {
  const std::string base = k3test::freshDir("spread-shard-roots");
  const std::string dst = base + "/dst", d2 = base + "/d2";
  fs::create_directories(dst);
  fs::create_directories(d2);
  const k3::ExpertManifest m = spreadManifest();
  k3test::writeFile(d2 + "/" + k3::SpreadMarker::kFileName, k3::SpreadMarker::forRoot(m, 1).toJson());
  const std::vector<k3::ShardRoot> roots = k3::shardRoots(dst, m, {});
  ASSERT_EQ(roots.size(), 2u);
  EXPECT_EQ(roots[0].dir, dst);
  EXPECT_EQ(roots[0].root, ".");
  EXPECT_EQ(roots[1].dir, dst + "/../d2");
  EXPECT_EQ(roots[1].root, "../d2");
  // m.shards = {part 2 in DST (root 0), part 1 in ../d2 (root 1)}.
  EXPECT_EQ(k3::shardPath(roots, m.shards[0]), dst + "/model-00002-of-000004.part2.safetensors");
  EXPECT_EQ(k3::shardPath(roots, m.shards[1]), dst + "/../d2/model-00002-of-000004.safetensors");
  EXPECT_EQ(k3::shardRoots(dst, m, {d2})[1].dir, d2);  // moved: where it is now

  // A one-directory container: DST alone; --spread for it is a usage error.
  k3::ExpertManifest plain = m;
  plain.roots.clear();
  const std::vector<k3::ShardRoot> one = k3::shardRoots(dst, plain, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].dir, dst);
  EXPECT_EQ(one[0].root, ".");
  std::string what;
  EXPECT_EQ(kindOf([&] { k3::shardRoots(dst, plain, {d2}); }, &what), k3::ErrorKind::Usage);
  EXPECT_NE(what.find("is not spread over several directories"), std::string::npos) << what;
}

}  // namespace
