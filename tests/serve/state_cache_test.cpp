// The state cache on a real (tiny) model: which prefix a prompt resumes
// from, checkpoints unused once the history diverges from them, the byte budget, and
// logits identical to a cold start whatever was reused.
#include <gtest/gtest.h>

#include "k3/serve/state_cache.h"
#include "model/model_fixtures.h"

namespace k3test::serve {
namespace {

using k3::serve::StateCache;

std::vector<int32_t> seq(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

struct Fixture {
  std::unique_ptr<k3::model::ModelWeights> w = k3::model::ModelWeights::open(k3test::model::container("tiny", 8));
  k3::model::Session live{*w, {2, 4, 256, 0}};
  std::vector<float> coldLogits(const std::vector<int32_t>& prompt) {
    k3::model::Session s(*w, {2, 4, 256, 0});
    s.feed(prompt);
    return {s.lastLogits(), s.lastLogits() + s.vocabSize()};
  }
  // What the engine does: resume, feed the rest, checkpoint.
  size_t serve(StateCache& c, const std::vector<int32_t>& prompt) {
    const size_t reused = c.resume(live.state(), prompt);
    live.feed(std::span<const int32_t>(prompt).subspan(reused));
    c.checkpoint(live.state());
    EXPECT_EQ(std::vector<float>(live.lastLogits(), live.lastLogits() + live.vocabSize()), coldLogits(prompt));
    return reused;
  }
};

const std::vector<int32_t> sys = {5, 6, 7, 8, 9, 10}, u1 = {11, 12, 13}, a1 = {20, 21, 22, 23}, u2 = {30, 31};

TEST(StateCache, ResumesFromTheLongestHeldPrefixWithIdenticalLogits) {
  Fixture f;
  StateCache c(1ull << 30);
  EXPECT_EQ(f.serve(c, seq({sys, u1})), 0u);
  f.live.feed(a1);  // the reply, as the engine feeds generated tokens
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size() + a1.size());  // live extends
  // Regenerate: the same prompt again; the live state moved past it -> its checkpoint.
  f.live.feed(std::vector<int32_t>{40, 41});
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size() + a1.size() + u2.size());
  // The reply re-rendered differently (reasoning dropped) -> the checkpoint before that reply.
  EXPECT_EQ(f.serve(c, seq({sys, u1, {24}, u2})), sys.size() + u1.size());
  // A checkpoint whose MLA rows the live state no longer holds is not used:
  // only the sys+u1 one remains usable.
  EXPECT_EQ(f.serve(c, seq({sys, u1, a1, u2})), sys.size() + u1.size());
  EXPECT_EQ(f.serve(c, seq({{99}, u2})), 0u);  // nothing shared: from token 0
}

TEST(StateCache, NoBudgetMeansNoReuseAndTheBudgetBoundsBytes) {
  Fixture f;
  StateCache none(0);
  EXPECT_EQ(f.serve(none, seq({sys, u1})), 0u);
  EXPECT_EQ(f.serve(none, seq({sys, u1, a1})), 0u);
  EXPECT_EQ(none.stats().entries, 0u);

  const size_t one = f.live.snapshot().bytes();
  StateCache small(one * 2 + one / 2);  // room for two checkpoints
  f.live.reset();
  for (size_t n = 1; n <= 4; ++n) {
    std::vector<int32_t> p = sys;
    p.resize(sys.size() + n, 50);
    f.serve(small, p);
    EXPECT_LE(small.stats().bytes, one * 2 + one / 2);
  }
  EXPECT_EQ(small.stats().entries, 2u);
}

TEST(StateCache, StaleLiveLogitsAreNotReusedForTheWholePrompt) {
  Fixture f;
  StateCache c(1ull << 30);
  f.live.feed(seq({sys, u1}));  // no checkpoint taken, and say its logits are stale (a cancelled feed)
  const auto p = seq({sys, u1});
  f.live.state().logitsCurrent = false;
  EXPECT_EQ(c.resume(f.live.state(), p), 0u);
  EXPECT_EQ(c.resume(f.live.state(), seq({sys, u1, u2})), 0u);  // reset above: nothing held now
}

}  // namespace
}  // namespace k3test::serve
