// A container spread over several directories (k3-repack --spread, issue 21):
// placement (every layer's experts in every root, balanced), k3-verify --full,
// k3-run's logits equal to the unspread container's, a moved set, one-line
// errors for a missing directory / shard / wrong or swapped marker, resume
// and kill safety, and one loader queue per file system.
#include <gtest/gtest.h>

#include <simdjson.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "apps/container_fixture.h"
#include "k3/format/expert_manifest.h"
#include "k3/format/snapshot_index.h"
#include "k3/format/spread_layout.h"

namespace {

using namespace k3test::container;
namespace fs = std::filesystem;

// DST and its two other roots side by side under one directory.
struct SpreadSet {
  std::string base, dst, d2, d3;
  explicit SpreadSet(const std::string& dir) : base(dir), dst(dir + "/c"), d2(dir + "/d2"), d3(dir + "/d3") {}
  std::string spread() const { return d2 + "," + d3; }
  // Every file of the set (relative to base) -> bytes.
  std::map<std::string, std::string> files() const {
    std::map<std::string, std::string> all;
    for (const std::string& d : {dst, d2, d3}) {
      if (!fs::exists(d)) continue;
      for (const auto& [rel, bytes] : snapshotDir(d)) all[fs::relative(d, base).string() + "/" + rel] = bytes;
    }
    return all;
  }
};

std::vector<std::string> repackArgs(const std::string& src, const SpreadSet& s) {
  return {tool("k3-repack"), src, s.dst, "--bits", "4", "--threads", "2", "--spread", s.spread()};
}

// The reference spread container, converted once in one run.
const SpreadSet& referenceSet() {
  static const SpreadSet s = [] {
    SpreadSet set(k3test::freshDir("spread-ref"));
    k3test::RunResult r = runWith(repackArgs(k3test::synthSnapshot("tiny", 1), set), {});
    if (r.exitCode != 0) throw std::runtime_error("k3-repack --spread failed: " + r.err);
    return set;
  }();
  return s;
}

std::string logits(const std::string& dst, const std::vector<std::string>& extra = {}) {
  const std::string out = k3test::freshDir("spread-logits") + "/l.f32";
  std::vector<std::string> args = {dst, "--ids", "5,17,3,99,250,7,42,8,11", "--logits-out", out, "--threads", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  k3test::RunResult r = k3test::runTool("k3-run", args);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return fs::exists(out) ? k3test::readFile(out) : std::string();
}

// The one line k3-run printed on stderr (it must be one line).
std::string oneLine(const k3test::RunResult& r) {
  std::string e = r.err;
  while (!e.empty() && e.back() == '\n') e.pop_back();
  EXPECT_EQ(e.find('\n'), std::string::npos) << "more than one line: " << r.err;
  return e;
}

TEST(Spread, EveryLayerIsCutAcrossEveryRootBalanced) {
  const SpreadSet& s = referenceSet();
  const k3::ExpertManifest m = k3::ExpertManifest::load(s.dst + "/k3-manifest.json");
  EXPECT_EQ(m.formatVersion, k3::ExpertManifest::kSpreadFormatVersion);
  EXPECT_EQ(m.roots, (std::vector<std::string>{".", "../d2", "../d3"}));
  // layer -> root -> experts
  std::map<int, std::map<int, int>> perRoot;
  uint64_t rootBytes[3] = {};
  for (const k3::ManifestShard& sh : m.shards) {
    const std::string dir = sh.root == 0 ? s.dst : sh.root == 1 ? s.d2 : s.d3;
    EXPECT_TRUE(fs::exists(dir + "/" + sh.file)) << sh.file << " not in root " << sh.root;
    for (const k3::ManifestExpert& e : sh.experts) {
      ++perRoot[e.layer][sh.root];
      rootBytes[sh.root] += e.length;
    }
    // Within a shard, experts keep (layer, id) order: ranges are contiguous.
    for (size_t i = 1; i < sh.experts.size(); ++i)
      EXPECT_LT(std::make_pair(sh.experts[i - 1].layer, sh.experts[i - 1].id),
                std::make_pair(sh.experts[i].layer, sh.experts[i].id));
  }
  ASSERT_FALSE(perRoot.empty());
  for (const auto& [layer, roots] : perRoot) {
    ASSERT_EQ(roots.size(), 3u) << "layer " << layer << " is not on every root";
    int lo = 1 << 30, hi = 0;
    for (const auto& [root, n] : roots) lo = std::min(lo, n), hi = std::max(hi, n);
    EXPECT_LE(hi - lo, 1) << "layer " << layer;
  }
  // tiny: 16 experts per layer cut 6/5/5, the 6 rotating: within one expert.
  const auto [lo, hi] = std::minmax_element(std::begin(rootBytes), std::end(rootBytes));
  EXPECT_LE(*hi - *lo, m.expertBytes);
  EXPECT_GT(*lo, 0u);
  // Each other root is bound to the container; the index records locations.
  for (int k : {1, 2}) {
    const std::string marker = (k == 1 ? s.d2 : s.d3) + "/" + k3::SpreadMarker::kFileName;
    EXPECT_EQ(k3::SpreadMarker::parse(k3test::readFile(marker), marker), k3::SpreadMarker::forRoot(m, k));
  }
  const k3::SnapshotIndex idx =
      k3::SnapshotIndex::load(s.dst + "/model.safetensors.index.json", k3::SnapshotIndex::ShardNames::SpreadLocations);
  const std::vector<std::string> files = idx.shardFiles();
  std::set<std::string> named(files.begin(), files.end()), listed;
  for (const k3::ManifestShard& sh : m.shards) listed.insert(m.location(sh));
  EXPECT_EQ(named, listed);
  for (const std::string& loc : named) EXPECT_TRUE(fs::exists(s.dst + "/" + loc)) << loc;
}

TEST(Spread, VerifyFullIsSoundAndSeesEveryRoot) {
  const SpreadSet& s = referenceSet();
  VerifyOutcome v = verifyJson({s.dst, "--full", "--source", k3test::synthSnapshot("tiny", 1)});
  EXPECT_EQ(v.exitCode, 0) << v.raw;
  EXPECT_TRUE(v.sound) << v.raw;
  // A foreign file in another root is reported.
  const SpreadSet copy(k3test::freshDir("spread-junk"));
  for (const auto& [from, to] : {std::pair{s.dst, copy.dst}, {s.d2, copy.d2}, {s.d3, copy.d3}}) copyDir(from, to);
  k3test::writeFile(copy.d3 + "/notes.txt", "x");
  v = verifyJson({copy.dst});
  EXPECT_EQ(v.exitCode, 1) << v.raw;
  ASSERT_EQ(v.problems.size(), 1u) << v.raw;
  EXPECT_EQ(v.problems[0].kind, "unexpected");
  EXPECT_NE(v.problems[0].line.find("../d3/notes.txt"), std::string::npos) << v.problems[0].line;
}

TEST(Spread, RunGivesTheLogitsOfTheUnspreadContainer) {
  const std::string plain = logits(tinyContainer(4));
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(logits(referenceSet().dst), plain);
  // Streamed through bounded expert slots too (the loaders read every root).
  EXPECT_EQ(logits(referenceSet().dst, {"--expert-gb", "0.0003"}), plain);
}

TEST(Spread, AMovedSetOpensWithSpreadAndNotWithout) {
  const SpreadSet& s = referenceSet();
  const std::string base = k3test::freshDir("spread-moved");
  const std::string dst = base + "/models/c", d2 = base + "/ssd2/k3", d3 = base + "/ssd3/k3";
  fs::create_directories(base + "/models");
  copyDir(s.dst, dst);
  fs::create_directories(base + "/ssd2");
  fs::create_directories(base + "/ssd3");
  copyDir(s.d2, d2);
  copyDir(s.d3, d3);
  k3test::RunResult r = k3test::runTool("k3-run", {dst, "--ids", "1,2"});
  EXPECT_EQ(r.exitCode, 1);
  const std::string line = oneLine(r);
  EXPECT_NE(line.find("spread root 1"), std::string::npos) << line;
  EXPECT_NE(line.find("--spread"), std::string::npos) << line;
  r = k3test::runTool("k3-verify", {dst});
  EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("spread root 1"), std::string::npos) << r.err;

  VerifyOutcome v = verifyJson({dst, "--full", "--spread", d2 + "," + d3});
  EXPECT_TRUE(v.sound) << v.raw;
  EXPECT_EQ(logits(dst, {"--spread", d2 + "," + d3}), logits(tinyContainer(4)));
  r = k3test::runTool("k3-run", {dst, "--ids", "1,2", "--spread", d2});
  EXPECT_EQ(r.exitCode, 2) << r.err;  // usage: two directories expected
  EXPECT_NE(oneLine(r).find("1 directories given"), std::string::npos) << r.err;
}

TEST(Spread, WrongSwappedOrForeignDirectoryIsOneLineAtStart) {
  const SpreadSet& s = referenceSet();
  // Swapped: d3 holds root 2, not root 1.
  k3test::RunResult r = k3test::runTool("k3-run", {s.dst, "--ids", "1,2", "--spread", s.d3 + "," + s.d2});
  EXPECT_EQ(r.exitCode, 1);
  std::string line = oneLine(r);
  EXPECT_NE(line.find(s.d3 + "/k3-spread-root.json"), std::string::npos) << line;
  EXPECT_NE(line.find("wrong or swapped"), std::string::npos) << line;
  r = k3test::runTool("k3-verify", {s.dst, "--spread", s.d3 + "," + s.d2});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.err.find("wrong or swapped"), std::string::npos) << r.err;
  // A directory with no marker.
  const std::string empty = k3test::freshDir("spread-empty");
  r = k3test::runTool("k3-run", {s.dst, "--ids", "1,2", "--spread", empty + "," + s.d3});
  EXPECT_EQ(r.exitCode, 1);
  line = oneLine(r);
  EXPECT_NE(line.find(empty + "/k3-spread-root.json: not found"), std::string::npos) << line;
  // --spread on a container that is not spread.
  r = k3test::runTool("k3-run", {tinyContainer(4), "--ids", "1,2", "--spread", s.d2});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(oneLine(r).find("is not spread"), std::string::npos) << r.err;
  // Another container may not take over a root: k3-repack refuses, nothing written there.
  const auto before = s.files();
  const SpreadSet other(k3test::freshDir("spread-other"));
  r = k3test::runTool("k3-repack", {k3test::synthSnapshot("tiny", 1), other.dst, "--bits", "8", "--spread",
                                    s.d2 + "," + other.d3});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("another container"), std::string::npos) << r.err;
  EXPECT_TRUE(s.files() == before);
}

TEST(Spread, MissingShardOrDirectoryIsOneLineAtStart) {
  const SpreadSet& s = referenceSet();
  const SpreadSet copy(k3test::freshDir("spread-missing"));
  for (const auto& [from, to] : {std::pair{s.dst, copy.dst}, {s.d2, copy.d2}, {s.d3, copy.d3}}) copyDir(from, to);
  const k3::ExpertManifest m = k3::ExpertManifest::load(copy.dst + "/k3-manifest.json");
  const k3::ManifestShard* gone = nullptr;
  for (const auto& sh : m.shards)
    if (sh.root == 2 && !sh.experts.empty()) gone = &sh;
  ASSERT_NE(gone, nullptr);
  fs::remove(copy.d3 + "/" + gone->file);
  k3test::RunResult r = k3test::runTool("k3-run", {copy.dst, "--ids", "1,2"});
  EXPECT_EQ(r.exitCode, 1);
  const std::string line = oneLine(r);
  EXPECT_NE(line.find(gone->file), std::string::npos) << line;
  EXPECT_NE(line.find("[missing] shard ../d3/" + gone->file), std::string::npos) << line;  // the cause, not its effects
  VerifyOutcome v = verifyJson({copy.dst});
  EXPECT_EQ(v.exitCode, 1);
  bool named = false;
  for (const auto& p : v.problems) named = named || (p.kind == "missing" && p.shard == "../d3/" + gone->file);
  EXPECT_TRUE(named) << v.raw;
  // The whole directory gone.
  fs::remove_all(copy.d2);
  r = k3test::runTool("k3-run", {copy.dst, "--ids", "1,2"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(oneLine(r).find(copy.dst + "/../d2: spread root 1"), std::string::npos) << r.err;
}

TEST(Spread, KilledRunsResumeByteIdenticalAndOtherSettingsAreRefused) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const auto ref = referenceSet().files();
  auto rel = [](const std::map<std::string, std::string>& files) {
    std::map<std::string, std::string> out;  // without the base directory's name
    for (const auto& [k, v] : files)
      if (k.find(".tmp") == std::string::npos && k.find(".k3-repack.lock") == std::string::npos) out[k] = v;
    return out;
  };
  int killed = 0;
  for (int n : {1, 3, 8, 15, 24, 37, 52, 70, 95}) {
    const SpreadSet s(k3test::freshDir("spread-kill"));
    k3test::RunResult r = runWith(repackArgs(src, s), {"K3_REPACK_TEST_KILL_AFTER=" + std::to_string(n)});
    killed += r.signal == SIGKILL;
    for (const auto& [name, bytes] : rel(s.files())) {
      if (name.find("model.safetensors.index.json") != std::string::npos) continue;  // rebuilt at the end
      auto it = ref.find(name);
      ASSERT_NE(it, ref.end()) << "kill at " << n << ": unexpected " << name;
      EXPECT_TRUE(it->second == bytes) << "kill at " << n << ": " << name << " differs";
    }
    ASSERT_EQ(runWith(repackArgs(src, s), {}).exitCode, 0) << "rerun after kill at " << n;
    EXPECT_TRUE(rel(s.files()) == ref) << "rerun after kill at " << n << " is not byte-identical";
  }
  EXPECT_GE(killed, 6);
  // A rerun without --spread (or with other directories) is refused, not mixed.
  // One job, so that 20 events in some part is already published (with two
  // jobs both may still be in their first shard).
  const SpreadSet s(k3test::freshDir("spread-rerun"));
  std::vector<std::string> oneJob = repackArgs(src, s);
  oneJob.insert(oneJob.end(), {"--jobs", "1"});
  ASSERT_EQ(runWith(oneJob, {"K3_REPACK_TEST_KILL_AFTER=20"}).signal, SIGKILL);
  k3test::RunResult r = k3test::runTool("k3-repack", {src, s.dst, "--bits", "4"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("--spread over 3 directories"), std::string::npos) << r.err;
  r = k3test::runTool("k3-repack", {src, s.dst, "--bits", "4", "--spread", s.d2});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.err.find("other settings"), std::string::npos) << r.err;
  ASSERT_EQ(runWith(repackArgs(src, s), {}).exitCode, 0);
  EXPECT_TRUE(rel(s.files()) == ref);
}

TEST(Spread, ShardSlicesThenFinalizeEqualOneRun) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const SpreadSet s(k3test::freshDir("spread-slices"));
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--shards", "5-9"}, {"--shards", "1-4"}, {"--finalize"}}) {
    std::vector<std::string> args = repackArgs(src, s);
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_EQ(runWith(args, {}).exitCode, 0) << extra[0];
  }
  EXPECT_TRUE(s.files() == referenceSet().files());
}

TEST(Spread, BadSpreadDirectoriesAreUsageErrors) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const std::string base = k3test::freshDir("spread-usage");
  for (const auto& dirs : {base + "/c", base + "/c/inner", base + "/d2," + base + "/d2", src, base + "/d2,"}) {
    k3test::RunResult r = k3test::runTool("k3-repack", {src, base + "/c", "--spread", dirs});
    EXPECT_EQ(r.exitCode, 2) << dirs << ": " << r.err;
    EXPECT_FALSE(fs::exists(base + "/c/k3-manifest.json"));
  }
}

// Two file systems: the residency keeps one loader queue per file system.
TEST(Spread, OneLoaderQueuePerFileSystem) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "mounting tmpfs needs root";
  }
  const std::string base = k3test::freshDir("spread-fs");
  const SpreadSet s(base);
  fs::create_directories(s.d2);
  if (::mount("tmpfs", s.d2.c_str(), "tmpfs", 0, "size=8m") != 0) {
    GTEST_SKIP() << "tmpfs mount refused";
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{s.d2};
  k3test::RunResult r = k3test::runTool("k3-repack", {k3test::synthSnapshot("tiny", 1), s.dst, "--bits", "4",
                                                      "--spread", s.d2});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  auto queues = [](const std::string& dst) {
    k3test::RunResult run = k3test::runTool("k3-run", {dst, "-p", "Hello", "-n", "4", "--expert-gb", "0.0003", "--json", "--temp", "0"});
    EXPECT_EQ(run.exitCode, 0) << run.err;
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    int64_t n = -1;
    std::string out = run.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const std::string last = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    if (p.parse(last).get(doc) == simdjson::SUCCESS)
      if (doc["expert_read_queues"].get_int64().get(n) != simdjson::SUCCESS) n = -1;
    return n;
  };
  EXPECT_EQ(queues(s.dst), 2);
  EXPECT_EQ(queues(tinyContainer(4)), 1);
  // Reads interleaved over the two queues, down to a few slots: same logits.
  const std::string plain = logits(tinyContainer(4));
  for (const char* gb : {"0.0003", "0.00003", "0.000001"}) EXPECT_EQ(logits(s.dst, {"--expert-gb", gb}), plain) << gb;
}

}  // namespace
