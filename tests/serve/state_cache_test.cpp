// The state cache on a real (tiny) model: which prefix a prompt resumes
// from, any number of conversations in any order, the byte budgets, the disk
// tier across a restart, files that must never be used, and logits identical
// to a cold start whatever was reused.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "k3/serve/state_cache.h"
#include "k3/serve/state_file.h"
#include "model/model_fixtures.h"

namespace k3test::serve {
namespace {

namespace fs = std::filesystem;
using k3::serve::StateCache;
using k3::serve::StateCacheOptions;

std::vector<int32_t> seq(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int32_t> run(size_t n, int32_t salt) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 13 + static_cast<size_t>(salt) * 7) % 200 + 3));
  return ids;
}

k3::Sha256Digest digest(uint8_t fill) {
  k3::Sha256Digest d;
  d.fill(fill);
  return d;
}

struct Fixture {
  std::unique_ptr<k3::model::ModelWeights> w = k3::model::ModelWeights::open(k3test::model::container("tiny", 8));
  k3::model::Session live{*w, {2, 4, 256, 0}};
  std::vector<std::string> logged;
  StateCacheOptions opts(uint64_t ram, const std::string& dir = "", uint64_t disk = 1ull << 30) {
    StateCacheOptions o;
    o.ramBytes = ram;
    o.dir = dir;
    o.diskBytes = disk;
    o.container = digest(7);
    o.log = [this](const std::string& line) { logged.push_back(line); };
    return o;
  }
  std::vector<float> coldLogits(const std::vector<int32_t>& prompt) {
    k3::model::Session s(*w, {2, 4, 256, 0});
    s.feed(prompt);
    return {s.lastLogits(), s.lastLogits() + s.vocabSize()};
  }
  // What the engine does: resume, feed the rest, checkpoint; the logits are
  // those of a cold run whatever was reused.
  size_t serve(StateCache& c, const std::vector<int32_t>& prompt) {
    const size_t reused = c.resume(live.state(), prompt);
    live.feed(std::span<const int32_t>(prompt).subspan(reused));
    c.checkpoint(live.state());
    EXPECT_EQ(std::vector<float>(live.lastLogits(), live.lastLogits() + live.vocabSize()), coldLogits(prompt));
    return reused;
  }
  // A reply: fed token by token as the engine does, then checkpointed.
  void reply(StateCache& c, const std::vector<int32_t>& ids) {
    for (int32_t id : ids) live.feed({&id, 1});
    c.checkpoint(live.state());
  }
};

const std::vector<int32_t> sys = {5, 6, 7, 8, 9, 10}, u1 = {11, 12, 13}, a1 = {20, 21, 22, 23}, u2 = {30, 31};

TEST(StateCache, ResumesFromTheLongestStoredPrefixWithIdenticalLogits) {
  Fixture f;
  StateCache c(f.opts(1ull << 30), f.w->config());
  EXPECT_EQ(f.serve(c, seq({sys, u1})), 0u);
  f.live.feed(a1);  // the reply, as the engine feeds generated tokens
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size() + a1.size());  // live extends
  // Regenerate: the same prompt again; the live state moved past it -> its checkpoint.
  f.live.feed(std::vector<int32_t>{40, 41});
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size() + a1.size() + u2.size());
  // The reply re-rendered differently (reasoning dropped) -> the checkpoint before that reply.
  EXPECT_EQ(f.serve(c, seq({sys, u1, {24}, u2})), sys.size() + u1.size());
  // Checkpoints carry their MLA rows: the older branch is still there after the live one diverged.
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size() + a1.size() + u2.size());
  EXPECT_EQ(f.serve(c, seq({{99}, u2})), 0u);  // nothing shared: from token 0
}

TEST(StateCache, InterleavedConversationsEachResumeWhereTheyLeftOff) {
  // A, B, C, A, B, C, ...: every later turn resumes from the end of that
  // conversation's previous reply, however many others ran in between.
  Fixture f;
  StateCache c(f.opts(1ull << 30), f.w->config());
  std::vector<std::vector<int32_t>> history(3);
  for (int turn = 0; turn < 4; ++turn)
    for (int conv = 0; conv < 3; ++conv) {
      auto& h = history[static_cast<size_t>(conv)];
      const size_t before = h.size();
      const auto user = run(5 + static_cast<size_t>(turn), conv * 10 + turn);
      h.insert(h.end(), user.begin(), user.end());
      EXPECT_EQ(f.serve(c, h), before) << "conversation " << conv << " turn " << turn;
      const auto answer = run(4, 50 + conv * 10 + turn);
      f.reply(c, answer);
      h.insert(h.end(), answer.begin(), answer.end());
    }
}

TEST(StateCache, NoBudgetMeansNoReuseAndTheBudgetBoundsBytes) {
  Fixture f;
  StateCache none(f.opts(0), f.w->config());
  EXPECT_EQ(f.serve(none, seq({sys, u1})), 0u);
  EXPECT_EQ(f.serve(none, seq({sys, u1, a1})), 0u);
  EXPECT_EQ(none.stats().entries, 0u);

  f.live.reset();
  f.live.feed(seq({sys, {50}}));
  const size_t one = f.live.snapshot().bytes();  // a checkpoint of 7 tokens
  const uint64_t budget = one * 2 + one / 2;
  StateCache small(f.opts(budget), f.w->config());
  f.live.reset();
  for (int salt = 1; salt <= 4; ++salt) {  // unrelated prompts of 7 tokens
    f.serve(small, run(7, salt));
    EXPECT_LE(small.stats().bytes, budget);
  }
  EXPECT_EQ(small.stats().entries, 2u);
}

TEST(StateCache, StaleLiveLogitsAreNotReusedForTheWholePrompt) {
  Fixture f;
  StateCache c(f.opts(1ull << 30), f.w->config());
  f.live.feed(seq({sys, u1}));  // no checkpoint taken, and say its logits are stale (a cancelled feed)
  const auto p = seq({sys, u1});
  f.live.state().logitsCurrent = false;
  EXPECT_EQ(c.resume(f.live.state(), p), 0u);
  EXPECT_EQ(c.resume(f.live.state(), seq({sys, u1, u2})), 0u);  // reset above: nothing held now
}

TEST(StateCache, ARestartOnTheSameDirectoryResumesFromDisk) {
  Fixture f;
  const std::string dir = freshDir("state-cache-restart");
  const auto prompt = seq({sys, u1, a1, u2});
  {
    StateCache c(f.opts(1ull << 30, dir), f.w->config());
    f.serve(c, seq({sys, u1}));
    f.reply(c, a1);
    c.drain();
    EXPECT_EQ(c.stats().disk.written, 2u);
  }
  f.live.reset();  // a new process: nothing in RAM, nothing live
  StateCache again(f.opts(1ull << 30, dir), f.w->config());
  EXPECT_EQ(f.serve(again, prompt), sys.size() + u1.size() + a1.size());
  EXPECT_EQ(again.stats().disk.loaded, 1u);
  EXPECT_TRUE(f.logged.empty());
  // Another container's cache never sees these files (its keys differ).
  f.live.reset();
  StateCacheOptions other = f.opts(1ull << 30, dir);
  other.container = digest(8);
  StateCache foreign(other, f.w->config());
  EXPECT_EQ(f.serve(foreign, prompt), 0u);
}

TEST(StateCache, TheDiskBudgetRemovesTheOldestFiles) {
  Fixture f;
  const std::string dir = freshDir("state-cache-disk-budget");
  f.live.feed(run(8, 1));
  const uint64_t file = k3::serve::stateFileBytes(f.live.snapshot());
  f.live.reset();
  StateCache c(f.opts(1ull << 30, dir, file * 3), f.w->config());
  for (int salt = 1; salt <= 6; ++salt) {
    f.live.reset();
    f.serve(c, run(8, salt));
    c.drain();
    uint64_t total = 0;
    for (const auto& e : fs::directory_iterator(dir)) total += fs::file_size(e.path());
    EXPECT_LE(total, file * 3);
  }
  EXPECT_EQ(c.stats().disk.written, 6u);
  EXPECT_EQ(c.stats().disk.removed, 3u);
  // The newest survive: a fresh cache resumes the last prompt from disk, not the first.
  f.live.reset();
  StateCache again(f.opts(1ull << 30, dir), f.w->config());
  EXPECT_EQ(f.serve(again, seq({run(8, 6), {3}})), 8u);
  f.live.reset();
  EXPECT_EQ(f.serve(again, seq({run(8, 1), {3}})), 0u);
}

// A published file, as bytes, and what a test does to it.
std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void writeAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
// Re-seals a file after a header edit: the hash over the file with its
// hash field (bytes 96..128, docs/STATE_CACHE.md) zero.
void reseal(std::string& b) {
  std::memset(b.data() + 96, 0, 32);
  k3::Sha256 sha;
  sha.update(b.data(), b.size());
  const auto d = sha.finish();
  std::memcpy(b.data() + 96, d.data(), 32);
}

TEST(StateCache, BadFilesAreIgnoredWithOneLogLineAndNeverUsed) {
  Fixture f;
  const auto prompt = seq({sys, u1});
  const auto next = seq({sys, u1, u2});
  const std::string name = k3::serve::stateKey(digest(7), prompt).hex() + ".k3state";
  std::string good;
  {
    const std::string dir = freshDir("state-cache-good");
    StateCache c(f.opts(1ull << 30, dir), f.w->config());
    f.serve(c, prompt);
    c.drain();
    good = readAll(dir + "/" + name);
    ASSERT_GT(good.size(), 4096u);
  }
  struct Case {
    const char* what;
    std::function<void(const std::string& path)> make;
    const char* logSays;  // nullptr: never looked at, nothing to log
  };
  const std::vector<Case> cases = {
      {"truncated mid-block", [&](const std::string& p) { writeAll(p, good.substr(0, good.size() - 100)); }, "truncated"},
      {"truncated at a block", [&](const std::string& p) { writeAll(p, good.substr(0, good.size() - 4096)); }, "truncated"},
      {"empty", [&](const std::string& p) { writeAll(p, ""); }, "truncated"},
      {"a payload byte flipped", [&](std::string p) { std::string b = good; b[b.size() / 2] ^= 1; writeAll(p, b); }, "hash"},
      {"a header byte flipped", [&](std::string p) { std::string b = good; b[70] ^= 1; writeAll(p, b); }, "hash"},
      {"not a state file", [&](const std::string& p) { writeAll(p, std::string(8192, 'x')); }, "magic"},
      {"another format version", [&](const std::string& p) { std::string b = good; b[8] = 2; reseal(b); writeAll(p, b); }, "version"},
      {"another container", [&](const std::string& p) { std::string b = good; b[16] ^= 0x55; reseal(b); writeAll(p, b); }, "another container"},
      {"another prefix under this name", [&](const std::string& p) { std::string b = good; b[48] ^= 1; reseal(b); writeAll(p, b); }, "another prefix"},
      {"a directory", [&](const std::string& p) { fs::create_directory(p); }, nullptr},
      {"being written by another process (its temp)", [&](const std::string& p) { writeAll(p + ".tmp-999999", good.substr(0, 5000)); }, nullptr},
      {"written in place, half done", [&](const std::string& p) { writeAll(p, good.substr(0, good.size() / 2)); }, "truncated"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    const std::string dir = freshDir("state-cache-bad");
    const std::string path = dir + "/" + name;
    k.make(path);
    f.logged.clear();
    f.live.reset();
    StateCache c(f.opts(1ull << 30, dir), f.w->config());
    EXPECT_EQ(f.serve(c, next), 0u);  // not used: from token 0, logits as cold
    f.live.reset();
    EXPECT_EQ(c.resume(f.live.state(), seq({prompt, {77}})), 0u);  // asked again: not used, not logged again
    EXPECT_EQ(f.live.history().size(), 0u);
    if (k.logSays) {
      ASSERT_EQ(f.logged.size(), 1u);
      EXPECT_NE(f.logged[0].find(name), std::string::npos) << f.logged[0];
      EXPECT_NE(f.logged[0].find(k.logSays), std::string::npos) << f.logged[0];
    } else {
      EXPECT_TRUE(f.logged.empty());
    }
    EXPECT_EQ(c.stats().disk.loaded, 0u);
  }
}

}  // namespace
}  // namespace k3test::serve
