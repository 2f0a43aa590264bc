// k3-verify on fresh tiny containers (bits 4, 8, 16): sound in every mode;
// exit codes for usage and unreadable input; the --source pass names the
// expert whose source bytes differ; structural defects found without --full.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "apps/container_fixture.h"
#include "apps/verify_test_support.h"

namespace {

using namespace k3test::container;
namespace fs = std::filesystem;

bool hasProblem(const VerifyOutcome& v, const std::string& kind, const std::string& shard = "") {
  for (const auto& p : v.problems)
    if (p.kind == kind && (shard.empty() || p.shard == shard)) return true;
  return false;
}

class VerifyFresh : public ::testing::TestWithParam<int> {};

TEST_P(VerifyFresh, SoundInEveryMode) {
  const std::string dst = tinyContainer(GetParam());
  const std::string src = k3test::synthSnapshot("tiny", 1);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {dst}, {dst, "--full"}, {dst, "--full", "--source", src, "--threads", "1"},
           {dst, "--source", src, "--threads", "2"}}) {
    VerifyOutcome v = verifyJson(args);
    EXPECT_EQ(v.exitCode, 0) << v.raw;
    EXPECT_TRUE(v.sound) << v.raw;
    EXPECT_TRUE(v.problems.empty()) << v.raw;
  }
  k3test::RunResult text = k3test::runTool("k3-verify", {dst, "--full"});
  EXPECT_EQ(text.exitCode, 0);
  EXPECT_NE(text.out.find("SOUND (full)"), std::string::npos) << text.out;
}

INSTANTIATE_TEST_SUITE_P(Bits, VerifyFresh, ::testing::Values(4, 8, 16));

TEST(VerifyCli, ExitCodes) {
  EXPECT_EQ(k3test::runTool("k3-verify", {"--help"}).exitCode, 0);
  k3test::RunResult v = k3test::runTool("k3-verify", {"--version"});
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_NE(v.out.find(K3KIT_VERSION), std::string::npos);
  EXPECT_EQ(k3test::runTool("k3-verify", {}).exitCode, 2);                  // DST required
  EXPECT_EQ(k3test::runTool("k3-verify", {"a", "--bogus"}).exitCode, 2);    // unknown flag
  k3test::RunResult missing = k3test::runTool("k3-verify", {k3test::testTmp() + "/no/such/dir"});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_EQ(missing.err, "k3-verify: " + k3test::testTmp() + "/no/such/dir: not a readable directory\n");
  const std::string dst = tinyContainer(8);
  EXPECT_EQ(k3test::runTool("k3-verify", {dst, "--source", k3test::testTmp() + "/no/src"}).exitCode, 2);
}

// A changed source expert is named by the --source pass (and only then).
TEST(VerifySource, NamesTheExpertWhoseSourceBytesDiffer) {
  const std::string dst = tinyContainer(4);
  const std::string src = k3test::freshDir("src-copy") + "/s";
  copyDir(k3test::synthSnapshot("tiny", 1), src);
  auto experts = expertTensors(src);
  ASSERT_FALSE(experts.empty());
  const ExpertTensorAt& t = experts[experts.size() / 3];
  const uint64_t at = t.begin + (t.end - t.begin) / 2;
  writeByte(t.path, at, static_cast<uint8_t>(readByte(t.path, at) ^ 0x40));
  VerifyOutcome fast = verifyJson({dst});
  EXPECT_EQ(fast.exitCode, 0) << fast.raw;  // the container itself is untouched
  VerifyOutcome v = verifyJson({dst, "--source", src});
  EXPECT_EQ(v.exitCode, 1) << v.raw;
  ASSERT_EQ(v.problems.size(), 1u) << v.raw;
  EXPECT_EQ(v.problems[0].kind, "source");
  EXPECT_EQ(v.problems[0].layer, t.layer);
  EXPECT_EQ(v.problems[0].expert, t.id);
}

// Container-level defects the fast mode must report, each with its class.
TEST(VerifyFast, StructuralDefects) {
  const std::string good = tinyContainer(8);
  const std::string shard = "model-00003-of-000009.safetensors";
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    const char* kind;
  };
  const std::vector<Case> cases = {
      {"manifest removed", [](const std::string& d) { fs::remove(d + "/k3-manifest.json"); }, "manifest"},
      {"index removed", [](const std::string& d) { fs::remove(d + "/model.safetensors.index.json"); }, "index"},
      {"config removed", [](const std::string& d) { fs::remove(d + "/config.json"); }, "config"},
      {"shard removed", [&](const std::string& d) { fs::remove(d + "/" + shard); }, "missing"},
      {"shard truncated by one byte",
       [&](const std::string& d) { fs::resize_file(d + "/" + shard, fs::file_size(d + "/" + shard) - 1); }, "header"},
      {"shard grown by one byte",
       [&](const std::string& d) { std::ofstream(d + "/" + shard, std::ios::app) << 'x'; }, "header"},
      {"leftover temp file",
       [&](const std::string& d) { std::ofstream(d + "/" + shard + ".tmp") << "partial"; }, "unexpected"},
      {"copied file changed size",
       [](const std::string& d) { std::ofstream(d + "/tiktoken.model", std::ios::app) << "\n"; }, "size"},
  };
  for (const auto& c : cases) {
    const std::string dst = k3test::freshDir("structural") + "/c";
    copyDir(good, dst);
    c.damage(dst);
    VerifyOutcome v = verifyJson({dst});
    EXPECT_EQ(v.exitCode, 1) << c.what << "\n" << v.raw;
    EXPECT_TRUE(hasProblem(v, c.kind)) << c.what << ": no '" << c.kind << "' problem\n" << v.raw;
    fs::remove_all(fs::path(dst).parent_path());
  }
}

}  // namespace
