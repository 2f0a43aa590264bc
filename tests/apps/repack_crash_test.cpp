// k3-repack crash safety: SIGKILL at many points (the converter's own event
// counter and wall-clock kills), disk full (RLIMIT_FSIZE -> EFBIG) and a
// source changed under a resumed run. After each interruption nothing
// partial or foreign is visible under a final name, and a plain rerun ends
// byte-identical to an uninterrupted conversion.
#include <gtest/gtest.h>

#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>

#include "apps/container_fixture.h"
#include "k3/format/snapshot_index.h"

namespace {

using namespace k3test::container;
namespace fs = std::filesystem;

// Temp files, and the DST lock a killed run leaves (the next run takes it over
// and removes it when done).
bool isLeftover(const std::string& rel) {
  return rel.find(".tmp") != std::string::npos || rel == ".k3-repack.lock";
}

// After an interrupted run: every file under a final name equals the
// reference's, the manifest (written last) is absent or final, and the
// index, if any, names only shards that exist.
void expectNothingBroken(const std::string& dst, const std::map<std::string, std::string>& ref,
                         const std::string& when) {
  if (!fs::exists(dst)) return;
  for (const auto& [rel, bytes] : snapshotDir(dst)) {
    if (isLeftover(rel)) continue;
    if (rel == "model.safetensors.index.json") {
      k3::SnapshotIndex idx;
      ASSERT_NO_THROW(idx = k3::SnapshotIndex::parse(bytes, rel)) << when;
      for (const auto& f : idx.shardFiles()) EXPECT_TRUE(fs::exists(dst + "/" + f)) << when << ": " << f;
      continue;
    }
    auto it = ref.find(rel);
    ASSERT_NE(it, ref.end()) << when << ": unexpected file " << rel;
    EXPECT_TRUE(it->second == bytes) << when << ": " << rel << " differs from the uninterrupted run";
  }
}

std::vector<std::string> repackArgs(const std::string& src, const std::string& dst) {
  return {tool("k3-repack"), src, dst, "--bits", "4", "--threads", "2"};
}
// The same with --json: an error's kind is in the report on stdout.
std::vector<std::string> repackJsonArgs(const std::string& src, const std::string& dst) {
  std::vector<std::string> a = repackArgs(src, dst);
  a.push_back("--json");
  return a;
}

TEST(RepackCrash, SigkillAtManyPointsThenRerunIsByteIdentical) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const auto ref = snapshotDir(tinyContainer(4));
  int killed = 0;
  // Converter events (reads, quantized blocks, publishes, fragments, finalize steps).
  for (int n : {1, 2, 4, 7, 11, 16, 23, 31, 40, 52, 64, 77, 90, 104, 118, 133, 150}) {
    const std::string dst = k3test::freshDir("kill") + "/c";
    k3test::RunResult r = runWith(repackArgs(src, dst), {"K3_REPACK_TEST_KILL_AFTER=" + std::to_string(n)});
    if (r.signal == SIGKILL) ++killed;
    else ASSERT_EQ(r.exitCode, 0) << r.err;
    expectNothingBroken(dst, ref, "after kill at event " + std::to_string(n));
    k3test::RunResult again = runWith(repackArgs(src, dst), {});
    ASSERT_EQ(again.exitCode, 0) << "rerun after kill at " << n << ": " << again.err;
    EXPECT_TRUE(snapshotDir(dst) == ref) << "rerun after kill at event " << n << " is not byte-identical";
    fs::remove_all(fs::path(dst).parent_path());
  }
  EXPECT_GE(killed, 10);
}

TEST(RepackCrash, RepeatedKillsAndWallClockKills) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const auto ref = snapshotDir(tinyContainer(4));
  // Three kills in a row on the same DST, each later in the run, then finish.
  const std::string dst = k3test::freshDir("kill-chain") + "/c";
  for (int n : {9, 25, 60}) {
    runWith(repackArgs(src, dst), {"K3_REPACK_TEST_KILL_AFTER=" + std::to_string(n)});
    expectNothingBroken(dst, ref, "chain kill " + std::to_string(n));
  }
  ASSERT_EQ(runWith(repackArgs(src, dst), {}).exitCode, 0);
  EXPECT_TRUE(snapshotDir(dst) == ref);
  // Kills from outside at arbitrary moments (wherever the process happens to be).
  for (int ms : {5, 40, 90, 150, 250}) {
    const std::string d = k3test::freshDir("kill-clock") + "/c";
    runWith(repackArgs(src, d), {}, RLIM_INFINITY, ms);
    expectNothingBroken(d, ref, "kill after " + std::to_string(ms) + " ms");
    ASSERT_EQ(runWith(repackArgs(src, d), {}).exitCode, 0);
    EXPECT_TRUE(snapshotDir(d) == ref) << "kill after " << ms << " ms";
  }
}

TEST(RepackCrash, DiskFullGivesClearErrorKeepsCompleteShardsAndRerunFinishes) {
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const auto ref = snapshotDir(tinyContainer(4));
  // Per-file limits: the first shard fails; some shards fit; only the last does not.
  for (rlim_t limit : {rlim_t{40} << 10, rlim_t{200} << 10, rlim_t{280} << 10}) {
    const std::string dst = k3test::freshDir("diskfull") + "/c";
    k3test::RunResult r = runWith(repackJsonArgs(src, dst), {}, limit);
    EXPECT_EQ(r.signal, 0) << "killed by a signal (SIGXFSZ?)";
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_EQ(jsonErrorKind(r), "no-space") << r.out;
    EXPECT_EQ(r.err.rfind("k3-repack: ", 0), 0u) << r.err;
    EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
    expectNothingBroken(dst, ref, "disk full at " + std::to_string(limit));
    // Shards completed before the failure are kept (not removed by it).
    if (limit >= (rlim_t{280} << 10)) {
      int kept = 0;
      for (const auto& e : fs::directory_iterator(dst))
        kept += e.path().extension() == ".safetensors" && !isLeftover(e.path().filename().string());
      EXPECT_GE(kept, 1) << "no completed shard kept at limit " << limit;
    }
    k3test::RunResult again = runWith(repackArgs(src, dst), {});
    ASSERT_EQ(again.exitCode, 0) << again.err;
    EXPECT_TRUE(snapshotDir(dst) == ref) << "rerun after disk full at " << limit;
  }
}

// A real ENOSPC: a 1.2 MB tmpfs (the tiny container needs ~2.1 MB), then the
// filesystem grows ("space freed") and the rerun completes. Needs root.
TEST(RepackCrash, DiskFullOnASmallFilesystemThenSpaceFreed) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "mounting a tmpfs needs root";
  }
  const std::string mnt = k3test::freshDir("tmpfs");
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=1200k") != 0) {
    GTEST_SKIP() << "tmpfs mount refused";
  }
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{mnt};
  const std::string src = k3test::synthSnapshot("tiny", 1);
  const auto ref = snapshotDir(tinyContainer(4));
  const std::string dst = mnt + "/c";
  k3test::RunResult r = runWith(repackJsonArgs(src, dst), {});
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(jsonErrorKind(r), "no-space") << r.out;
  EXPECT_EQ(r.err.rfind("k3-repack: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json"));
  expectNothingBroken(dst, ref, "ENOSPC");
  const auto kept = snapshotDir(dst);
  ASSERT_EQ(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_REMOUNT, "size=8m"), 0);
  // Completed shards were not removed by the failure, and are reused as they are.
  k3test::RunResult again = runWith(repackArgs(src, dst), {});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_TRUE(snapshotDir(dst) == ref);
  for (const auto& [rel, bytes] : kept)
    if (!isLeftover(rel) && rel != "model.safetensors.index.json") {
      EXPECT_TRUE(ref.at(rel) == bytes) << rel;
    }
}

TEST(RepackCrash, SourceChangedUnderResumedRunIsRefused) {
  const std::string root = k3test::freshDir("srcchange");
  const std::string src = root + "/src", dst = root + "/c";
  copyDir(k3test::synthSnapshot("tiny", 1), src);
  k3test::RunResult part = runWith({tool("k3-repack"), src, dst, "--bits", "4", "--shards", "1-4"}, {});
  ASSERT_EQ(part.exitCode, 0) << part.err;
  // Two ways a done shard's source changes: same size with a different header
  // (a __metadata__ value), and a different size (header grown).
  for (const char* how : {"same-size", "grown"}) {
    const std::string shard = src + "/model-00002-of-000011.safetensors";
    const std::string original = k3test::readFile(shard);
    std::string changed = original;
    const size_t pos = changed.find("\"format\":\"pt\"");
    ASSERT_NE(pos, std::string::npos);
    if (std::string(how) == "same-size") {
      changed[pos + 11] = 'x';  // "pt" -> "xt"
    } else {
      k3test::RunResult g = k3test::run({"/usr/bin/python3", "-c",
          "import json,struct,sys\n"
          "p=sys.argv[1]; raw=open(p,'rb').read(); n=struct.unpack('<Q',raw[:8])[0]\n"
          "h=json.loads(raw[8:8+n]); h['__metadata__']['note']='changed'\n"
          "t=json.dumps(h,separators=(',',':')); t+=' '*((8-(8+len(t))%8)%8)\n"
          "open(p,'wb').write(struct.pack('<Q',len(t))+t.encode()+raw[8+n:])\n", shard});
      ASSERT_EQ(g.exitCode, 0) << g.err;
      changed = k3test::readFile(shard);
      ASSERT_NE(changed.size(), original.size());
    }
    k3test::writeFile(shard, changed);
    const auto before = snapshotDir(dst);
    k3test::RunResult r = runWith(repackJsonArgs(src, dst), {});
    EXPECT_EQ(r.exitCode, 1) << how << ": " << r.err;
    EXPECT_EQ(jsonErrorKind(r), "source-changed") << how << ": " << r.out;
    EXPECT_EQ(r.err.rfind("k3-repack: ", 0), 0u) << how << ": " << r.err;
    EXPECT_FALSE(fs::exists(dst + "/k3-manifest.json")) << how;
    // Nothing that was complete is touched (temp files aside).
    auto after = snapshotDir(dst);
    for (const auto& [rel, bytes] : before)
      if (!isLeftover(rel) && rel != "model.safetensors.index.json") {
        ASSERT_TRUE(after.count(rel)) << how << ": " << rel << " removed";
        EXPECT_TRUE(after[rel] == bytes) << how << ": " << rel << " changed";
      }
    k3test::writeFile(shard, original);
  }
  // With the original source back, the resumed run completes identically.
  ASSERT_EQ(runWith(repackArgs(src, dst), {}).exitCode, 0);
  EXPECT_TRUE(snapshotDir(dst) == snapshotDir(tinyContainer(4)));
}

}  // namespace
