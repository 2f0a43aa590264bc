// k3-repack end to end on the synthetic tiny snapshot: containers checked by
// the independent scripts/k3_container_check.py (bits 4, 8, 16); --shards in
// two halves + --finalize == one run; SIGKILL at many points then rerun ==
// uninterrupted; disk full (RLIMIT_FSIZE) publishes nothing broken; refusals
// (changed source, other settings, duplicate tensor, missing shard, config
// disagreeing with tensors, truncated shard, bad flags) with non-zero exits.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "k3/format/safetensors_file.h"
#include "k3/format/safetensors_writer.h"
#include "container_fixture.h"
#include "support/test_env.h"

namespace fs = std::filesystem;

namespace {

using Tree = std::map<std::string, std::string>;

Tree readTree(const std::string& dir) {
  Tree t;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) t[fs::relative(e.path(), dir).string()] = k3test::readFile(e.path().string());
  return t;
}

void expectSameTree(const Tree& want, const std::string& dir, const std::string& what) {
  const Tree got = readTree(dir);
  std::vector<std::string> a, b;
  for (const auto& [k, v] : want) a.push_back(k);
  for (const auto& [k, v] : got) b.push_back(k);
  ASSERT_EQ(a, b) << what << ": different file sets";
  for (const auto& [k, v] : want) EXPECT_TRUE(got.at(k) == v) << what << ": " << k << " differs";
}

std::string tiny() { return k3test::synthSnapshot("tiny", 1); }

k3test::RunResult repack(std::vector<std::string> args) { return k3test::runTool("k3-repack", args); }
// The same with --json, for the error report's kind.
k3test::RunResult repackJson(std::vector<std::string> args) {
  args.push_back("--json");
  return repack(args);
}

// One uninterrupted conversion per bit width, made once per test process:
// one job, the source read with O_DIRECT. The tests compare the default
// run (the source cached, so read buffered; a job per core) and the other
// read paths against it, and the independent checker reads the default.
const Tree& reference(int bits) {
  static std::map<int, Tree> cache;
  auto it = cache.find(bits);
  if (it != cache.end()) return it->second;
  const std::string dst = k3test::freshDir("repack-ref") + "/out";
  auto r = repack({tiny(), dst, "--bits", std::to_string(bits), "--io", "direct", "--jobs", "1"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return cache[bits] = readTree(dst);
}

std::string copyOfTiny(const std::string& tag) {
  const std::string dir = k3test::freshDir(tag) + "/src";
  fs::copy(tiny(), dir, fs::copy_options::recursive);
  return dir;
}

std::string shardPath(const std::string& src, int n) {
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string name = e.path().filename().string();
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "model-%05d-of-", n);
    if (name.rfind(prefix, 0) == 0) return e.path().string();
  }
  ADD_FAILURE() << "no shard " << n << " in " << src;
  return {};
}

void expectRefused(const k3test::RunResult& r, const std::string& kind) {
  EXPECT_NE(r.exitCode, 0) << "accepted; stderr: " << r.err;
  EXPECT_EQ(k3test::container::jsonErrorKind(r), kind) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("k3-repack: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
}

class RepackBits : public ::testing::TestWithParam<int> {};

TEST_P(RepackBits, IndependentCheckerAcceptsContainer) {
  const int bits = GetParam();
  const std::string dst = k3test::freshDir("repack-bits") + "/out";
  auto r = repack({tiny(), dst, "--bits", std::to_string(bits), "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << "not quiet off a TTY: " << r.err;
  EXPECT_NE(r.out.find("\"ok\": true"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"finalized\": true"), std::string::npos) << r.out;
  auto c = k3test::run({"/usr/bin/python3", k3test::sourceDir() + "/scripts/k3_container_check.py", tiny(),
                        dst, "--bits", std::to_string(bits), "--require-manifest"});
  EXPECT_EQ(c.exitCode, 0) << c.out << c.err;
  for (const char* f : {"config.json", "tiktoken.model", "tokenizer_config.json", "generation_config.json",
                        "k3-manifest.json", "model.safetensors.index.json"})
    EXPECT_TRUE(fs::exists(dst + "/" + f)) << f;
  // Deterministic: a second conversion gives the same bytes.
  expectSameTree(reference(bits), dst, "second run");
}

INSTANTIATE_TEST_SUITE_P(Bits, RepackBits, ::testing::Values(4, 8, 16));

// Every way of reading the source and every job count gives the same bytes;
// the report says how the shards were read.
TEST(Repack, ReadPathsAndJobCountsGiveTheSameBytes) {
  const std::string src = tiny();
  struct Way {
    const char* io;
    const char* jobs;
  };
  for (const Way w : {Way{"direct", "3"}, Way{"direct", "8"}, Way{"buffered", "1"}, Way{"buffered", "2"}}) {
    SCOPED_TRACE(std::string("--io ") + w.io + " --jobs " + w.jobs);
    const std::string dst = k3test::freshDir("repack-ways") + "/out";
    auto r = repack({src, dst, "--bits", "4", "--io", w.io, "--jobs", w.jobs, "--threads", "2", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element report;
    ASSERT_EQ(parser.parse(r.out).get(report), simdjson::SUCCESS) << r.out;
    int64_t textShards = 0, directShards = -1;
    ASSERT_EQ(report["text_shards"].get(textShards), simdjson::SUCCESS) << r.out;
    ASSERT_EQ(report["phases"]["direct_shards"].get(directShards), simdjson::SUCCESS) << r.out;
    EXPECT_NE(textShards, 0);
    EXPECT_EQ(directShards, w.io[0] == 'd' ? textShards : 0) << r.out;
    expectSameTree(reference(4), dst, std::string(w.io) + " x " + w.jobs);
  }
  auto bad = repackJson({src, k3test::freshDir("repack-ways") + "/out", "--jobs", "0"});
  expectRefused(bad, "usage");
  bad = repackJson({src, k3test::freshDir("repack-ways") + "/out", "--io", "fast"});
  EXPECT_EQ(bad.exitCode, 2) << bad.err;
}

TEST(Repack, HelpVersionDryRun) {
  auto h = repack({"--help"});
  EXPECT_EQ(h.exitCode, 0);
  EXPECT_NE(h.out.find("--shards"), std::string::npos);
  auto v = repack({"--version"});
  EXPECT_EQ(v.exitCode, 0);
  EXPECT_NE(v.out.find(K3KIT_VERSION), std::string::npos) << v.out;
  const std::string dst = k3test::freshDir("repack-dry") + "/out";
  auto d = repack({tiny(), dst, "--dry-run"});
  EXPECT_EQ(d.exitCode, 0) << d.err;
  EXPECT_FALSE(fs::exists(dst)) << "dry run wrote something";
  EXPECT_NE(d.out.find("model-00001-of-"), std::string::npos) << d.out;
}

TEST(Repack, TwoHalvesPlusFinalizeEqualsOneRun) {
  const std::string dst = k3test::freshDir("repack-halves") + "/out";
  auto a = repack({tiny(), dst, "--bits", "4", "--shards", "1-4"});
  ASSERT_EQ(a.exitCode, 0) << a.err;
  EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json")) << "partial run published a manifest";
  EXPECT_TRUE(fs::exists(dst + "/model.safetensors.index.json")) << "partial run must rebuild the index";
  auto b = repack({tiny(), dst, "--bits", "4", "--shards", "9,5-8"});
  ASSERT_EQ(b.exitCode, 0) << b.err;
  auto f = repack({tiny(), dst, "--bits", "4", "--finalize"});
  ASSERT_EQ(f.exitCode, 0) << f.err;
  expectSameTree(reference(4), dst, "halves + finalize");
}

TEST(Repack, FinalizeRefusesMissingShards) {
  const std::string dst = k3test::freshDir("repack-finalize") + "/out";
  ASSERT_EQ(repack({tiny(), dst, "--shards", "2"}).exitCode, 0);
  expectRefused(repackJson({tiny(), dst, "--finalize"}), "missing");
  EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
}

// SIGKILL at the N-th converter event, then a second kill further on in the
// resumed run, then a rerun: nothing partial is ever published under a
// final name and the end result equals the reference byte for byte.
void killAnywhereThenRerun(const std::vector<std::string>& extra, const std::vector<int>& points, int minKilled) {
  const Tree& want = reference(8);
  std::vector<std::string> args{tiny(), ""};
  args.insert(args.end(), extra.begin(), extra.end());
  int killed = 0;
  for (int point : points) {
    SCOPED_TRACE(point);
    args[1] = k3test::freshDir("repack-kill") + "/out";
    const std::string& dst = args[1];
    ::setenv("K3_REPACK_TEST_KILL_AFTER", std::to_string(point).c_str(), 1);
    auto r = repack(args);
    // A second kill during the resumed run, a little further on.
    auto r2 = repack(args);
    ::unsetenv("K3_REPACK_TEST_KILL_AFTER");
    if (r.signal == 9) {
      ++killed;
    } else {
      EXPECT_EQ(r.exitCode, 0) << r.err;
    }
    (void)r2;
    // Nothing partial under a final name: every published shard equals the reference.
    for (const auto& e : fs::directory_iterator(dst)) {
      const std::string n = e.path().filename().string();
      if (n.size() > 12 && n.compare(n.size() - 12, 12, ".safetensors") == 0) {
        EXPECT_TRUE(k3test::readFile(e.path().string()) == want.at(n)) << n << " published partial";
      }
    }
    auto r3 = repack(args);
    ASSERT_EQ(r3.exitCode, 0) << r3.err;
    expectSameTree(want, dst, "rerun after kill at " + std::to_string(point));
  }
  EXPECT_GE(killed, minKilled) << "too few kill points hit the run";
}

TEST(Repack, SigkillAnywhereThenRerunIsByteIdentical) {
  killAnywhereThenRerun({}, {1, 2, 3, 5, 9, 17, 30, 44, 61, 77, 93, 104, 117, 125, 129, 131, 133}, 10);
}

// The same with three jobs converting at once and O_DIRECT source reads in
// flight when the kill lands (events then interleave across the jobs).
TEST(Repack, SigkillDuringParallelDirectJobsThenRerunIsByteIdentical) {
  killAnywhereThenRerun({"--io", "direct", "--jobs", "3"}, {1, 4, 9, 20, 40, 70, 100, 125}, 5);
}

TEST(Repack, DiskFullFailsCleanlyThenCompletes) {
  const std::string dst = k3test::freshDir("repack-full") + "/out";
  // RLIMIT_FSIZE of 200 KiB: the small shards fit, the layer shards do not.
  auto r = k3test::run({"/bin/bash", "-c", "ulimit -f 200; exec \"$0\" \"$@\"",
                        k3test::binDir() + "/k3-repack", tiny(), dst, "--json"});
  expectRefused(r, "no-space");
  EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
  const Tree& want = reference(8);
  for (const auto& e : fs::recursive_directory_iterator(dst)) {
    if (!e.is_regular_file()) continue;
    const std::string n = fs::relative(e.path(), dst).string();
    EXPECT_EQ(n.find(".tmp"), std::string::npos) << "temp file left behind: " << n;
    if (n.find(".safetensors") != std::string::npos && n.find(".k3-parts") == std::string::npos) {
      EXPECT_TRUE(k3test::readFile(e.path().string()) == want.at(n)) << n;
    }
  }
  auto again = repack({tiny(), dst});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  expectSameTree(want, dst, "rerun after disk full");
}

TEST(Repack, RefusesSourceChangedUnderResume) {
  const std::string src = copyOfTiny("repack-changed");
  const std::string dst = fs::path(src).parent_path().string() + "/out";
  ASSERT_EQ(repack({src, dst, "--shards", "2,3"}).exitCode, 0);
  // Same tensors, different header bytes: two more spaces of JSON padding.
  const std::string p = shardPath(src, 2);
  std::string bytes = k3test::readFile(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  bytes.insert(8 + n, "  ");
  n += 2;
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
  k3test::writeFile(p, bytes);
  expectRefused(repackJson({src, dst, "--shards", "2,3"}), "source-changed");
  expectRefused(repackJson({src, dst}), "source-changed");
  EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
  // A changed config.json is refused too.
  const std::string src2 = copyOfTiny("repack-changed-cfg");
  const std::string dst2 = fs::path(src2).parent_path().string() + "/out";
  ASSERT_EQ(repack({src2, dst2, "--shards", "1"}).exitCode, 0);
  k3test::writeFile(src2 + "/config.json", k3test::readFile(src2 + "/config.json") + "\n");
  expectRefused(repackJson({src2, dst2}), "source-changed");
}

TEST(Repack, RefusesOtherSettingsInSameDst) {
  const std::string dst = k3test::freshDir("repack-settings") + "/out";
  ASSERT_EQ(repack({tiny(), dst, "--shards", "2", "--bits", "8"}).exitCode, 0);
  expectRefused(repackJson({tiny(), dst, "--shards", "2", "--bits", "4"}), "mismatch");
}

TEST(Repack, RefusesBrokenSources) {
  {  // missing shard
    const std::string src = copyOfTiny("repack-missing");
    fs::remove(shardPath(src, 5));
    const std::string dst = fs::path(src).parent_path().string() + "/out";
    expectRefused(repackJson({src, dst}), "missing");
    EXPECT_FALSE(fs::exists(dst)) << "wrote into DST for a broken source";
  }
  {  // config disagreeing with the tensors
    const std::string src = copyOfTiny("repack-config");
    std::string cfg = k3test::readFile(src + "/config.json");
    const std::string from = "\"hidden_size\": 128";
    ASSERT_NE(cfg.find(from), std::string::npos);
    cfg.replace(cfg.find(from), from.size(), "\"hidden_size\": 192");
    k3test::writeFile(src + "/config.json", cfg);
    const std::string dst = fs::path(src).parent_path().string() + "/out";
    expectRefused(repackJson({src, dst}), "config");
    EXPECT_FALSE(fs::exists(dst));
  }
  {  // truncated shard
    const std::string src = copyOfTiny("repack-trunc");
    const std::string p = shardPath(src, 4);
    fs::resize_file(p, fs::file_size(p) - 100);
    expectRefused(repackJson({src, fs::path(src).parent_path().string() + "/out"}), "format");
  }
  {  // duplicate tensor: shard 3 also carries a tensor of shard 2
    const std::string src = copyOfTiny("repack-dup");
    auto s2 = k3::SafetensorsFile::open(shardPath(src, 2));
    auto s3 = k3::SafetensorsFile::open(shardPath(src, 3));
    const k3::TensorInfo& dup = s2.tensors().front();
    std::vector<k3::TensorSpec> specs;
    for (const auto& t : s3.tensors()) specs.push_back({t.name, t.dtype, t.shape});
    specs.push_back({dup.name, dup.dtype, dup.shape});
    const std::string out = shardPath(src, 3) + ".new";
    {
      k3::SafetensorsWriter w(out, specs);
      for (const auto& t : s3.tensors()) w.write(s3.data(t).data(), t.nbytes());
      w.write(s2.data(dup).data(), dup.nbytes());
      w.finish();
    }
    fs::rename(out, shardPath(src, 3));
    expectRefused(repackJson({src, fs::path(src).parent_path().string() + "/out"}), "duplicate");
  }
}

TEST(Repack, RefusesBadUsage) {
  const std::string dst = k3test::freshDir("repack-usage") + "/out";
  expectRefused(repackJson({tiny(), dst, "--shards", "99"}), "usage");
  expectRefused(repackJson({tiny(), dst, "--shards", "10"}), "usage");  // a vision-only shard
  expectRefused(repackJson({tiny(), dst, "--shards", "2,2"}), "usage");
  expectRefused(repackJson({tiny(), tiny()}), "usage");
  EXPECT_EQ(repack({tiny(), dst, "--bits", "5"}).exitCode, 2);
  EXPECT_EQ(repack({tiny()}).exitCode, 2);
  EXPECT_FALSE(fs::exists(dst));
}

}  // namespace

namespace {

TEST(Repack, CountsUe8m0EdgeScalesAndKeepsThem) {
  const std::string src = copyOfTiny("repack-edge");
  const std::string p = shardPath(src, 2);
  uint64_t at = 0;
  {
    auto f = k3::SafetensorsFile::open(p, k3::SafetensorsFile::Access::HeaderOnly);
    for (const auto& t : f.tensors())
      if (t.name.find(".experts.3.w2.weight_scale") != std::string::npos) at = f.dataOffset() + t.begin;
  }
  ASSERT_GT(at, 0u);
  std::string bytes = k3test::readFile(p);
  bytes[at] = '\0';
  bytes[at + 1] = static_cast<char>(255);
  k3test::writeFile(p, bytes);
  const std::string dst = fs::path(src).parent_path().string() + "/out";
  auto r = repack({src, dst, "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("\"expert_scale_edge_bytes\": 2,"), std::string::npos) << r.out;
  auto c = k3test::run({"/usr/bin/python3", k3test::sourceDir() + "/scripts/k3_container_check.py", src,
                        dst, "--bits", "8"});
  EXPECT_EQ(c.exitCode, 0) << c.out << c.err;
}

}  // namespace
