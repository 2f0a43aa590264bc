// ExpertManifest: write/parse round trip, schema errors, lookup helpers.
#include <gtest/gtest.h>

#include <string>

#include "k3/format/expert_manifest.h"
#include "k3/io/error.h"
#include "support/test_env.h"

namespace {

const std::string kHash(64, 'a');

k3::ExpertManifest sample() {
  k3::ExpertManifest m;
  m.toolVersion = "9.9.9";
  m.settings = {4, 8, 16};
  m.configSha256 = std::string(64, 'c');
  m.prefix = "language_model.";
  m.numLayers = 3;
  m.numExperts = 2;
  m.expertBytes = 100;
  k3::ManifestShard s;
  s.file = "model-00002-of-000004.safetensors";
  s.size = 1000;
  s.sha256 = kHash;
  s.dataOffset = 96;
  s.tensors = 20;
  s.source = {"model-00002-of-000006.safetensors", 5000, std::string(64, 'b')};
  s.experts = {{1, 0, 600, 100, std::string(64, '1')}, {1, 1, 700, 100, std::string(64, '2')}};
  m.shards.push_back(s);
  m.shards.push_back({"model-00001-of-000004.safetensors", 64, kHash, 64, 0,
                      {"model-00001-of-000006.safetensors", 64, kHash}, {}});
  m.files = {{"config.json", 12, kHash}};
  return m;
}

TEST(ExpertManifest, RoundTrip) {
  const k3::ExpertManifest m = sample();
  const std::string dir = k3test::freshDir("manifest");
  m.save(dir + "/k3-manifest.json");
  const k3::ExpertManifest back = k3::ExpertManifest::load(dir + "/k3-manifest.json");
  EXPECT_TRUE(back.sameRun(m));
  EXPECT_EQ(back.shards, m.shards);
  EXPECT_EQ(back.files, m.files);
  EXPECT_EQ(back.toJson(), m.toJson());
  const k3::ManifestShard* sh = nullptr;
  const k3::ManifestExpert* e = back.findExpert(1, 1, &sh);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->offset, 700u);
  EXPECT_EQ(sh->file, "model-00002-of-000004.safetensors");
  EXPECT_EQ(back.findExpert(2, 0), nullptr);
}

TEST(ExpertManifest, RefusesSchemaErrors) {
  const std::string good = sample().toJson();
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  struct {
    std::string json;
    k3::ErrorKind kind;
    const char* mention;
  } cases[] = {
      {"{", k3::ErrorKind::Format, "JSON"},
      {replaced("\"format_version\": 1", "\"format_version\": 3"), k3::ErrorKind::Unsupported, "format_version"},
      {replaced("\"k3-container\"", "\"other\""), k3::ErrorKind::Format, "format"},
      {replaced("\"offset\": 700", "\"offset\": 950"), k3::ErrorKind::Format, "shards[0].experts[1]"},
      {replaced("\"sha256\": \"1111", "\"sha256\": \"XX11"), k3::ErrorKind::Format, "sha256"},
      {replaced("\"tensors\": 20", "\"tensors\": -20"), k3::ErrorKind::Format, "tensors"},
      {replaced("\"settings\": {\"bits\": 4,", "\"settings\": {"), k3::ErrorKind::Format, "bits"},
  };
  for (const auto& c : cases) {
    try {
      (void)k3::ExpertManifest::parse(c.json, "m.json");
      ADD_FAILURE() << "accepted: " << c.mention;
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), c.kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.mention), std::string::npos) << e.what();
    }
  }
}

}  // namespace
