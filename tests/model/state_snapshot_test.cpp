// Session snapshots (the server's state cache) and cancellable feeds: a
// restored snapshot continues exactly like the uninterrupted session, and a
// cancelled feed keeps the tokens it consumed.
#include <atomic>

#include "k3/io/error.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

std::vector<int32_t> promptOf(size_t n, int32_t salt) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7 + salt) % 200 + 3));
  return ids;
}

std::vector<float> lastRow(const k3::model::Session& s) {
  return {s.lastLogits(), s.lastLogits() + s.vocabSize()};
}

TEST(ModelSnapshot, RestoreThenFeedEqualsAFreshSession) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session live(*w, {2, 4, 256, 0});
  const auto a = promptOf(11, 1), b = promptOf(9, 5), c = promptOf(6, 2);
  live.feed(a);
  const k3::model::StateSnapshot snap = live.snapshot();
  EXPECT_EQ(snap.tokens, a);
  EXPECT_GT(snap.bytes(), a.size() * 4);
  live.feed(b);  // diverge: the KDA state moves on, the MLA rows of `a` stay
  live.restore(snap);
  EXPECT_EQ(live.history(), a);
  EXPECT_EQ(live.position(), a.size());
  EXPECT_EQ(lastRow(live), snap.lastLogits);
  live.feed(c);

  k3::model::Session fresh(*w, {2, 4, 256, 0});
  std::vector<int32_t> ac = a;
  ac.insert(ac.end(), c.begin(), c.end());
  fresh.feed(ac);
  EXPECT_EQ(lastRow(live), lastRow(fresh));  // bit-identical
  EXPECT_EQ(live.history(), fresh.history());
}

TEST(ModelSnapshot, ASnapshotResumesWithoutTheSessionItCameFrom) {
  // The MLA rows travel with the snapshot: after the live rows are
  // overwritten (another conversation), or in another Session, restoring it
  // and feeding on equals a fresh session fed the whole sequence.
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 4, 256, 0});
  const auto a = promptOf(13, 1), other = promptOf(20, 3), c = promptOf(7, 2);
  s.feed(a);
  const auto snap = s.snapshot();
  s.reset();
  s.feed(other);  // every MLA row of `a` is overwritten
  s.restore(snap);
  EXPECT_EQ(s.history(), a);
  EXPECT_EQ(lastRow(s), snap.lastLogits);
  s.feed(c);
  k3::model::Session elsewhere(*w, {2, 4, 256, 0});
  elsewhere.restore(snap);
  elsewhere.feed(c);
  k3::model::Session fresh(*w, {2, 4, 256, 0});
  std::vector<int32_t> ac = a;
  ac.insert(ac.end(), c.begin(), c.end());
  fresh.feed(ac);
  EXPECT_EQ(lastRow(s), lastRow(fresh));  // bit-identical
  EXPECT_EQ(lastRow(elsewhere), lastRow(fresh));
  EXPECT_EQ(elsewhere.history(), fresh.history());
}

TEST(ModelSnapshot, RestoreRefusesASnapshotOfAnotherShape) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 4, 256, 0});
  s.feed(promptOf(8, 1));
  auto rowsShort = s.snapshot();
  for (auto& m : rowsShort.mla)
    if (!m.L.empty()) m.L.pop_back();
  EXPECT_THROW(s.restore(rowsShort), k3::Error);
  k3::model::Session small(*w, {2, 4, 4, 0});  // context 4 < 8 tokens
  EXPECT_THROW(small.restore(s.snapshot()), k3::Error);
  EXPECT_EQ(s.history(), promptOf(8, 1));  // a refused restore changes nothing
}

TEST(ModelSnapshot, CancelledFeedStopsBetweenChunksAndKeepsWhatItConsumed) {
  const std::string dir = container("tiny", 8);
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 4, 256, 0});
  std::atomic<bool> cancel{true};
  const auto p = promptOf(10, 1);
  EXPECT_FALSE(s.feed(p, nullptr, &cancel));
  EXPECT_TRUE(s.history().empty());
  cancel = false;
  EXPECT_TRUE(s.feed(p, nullptr, &cancel));
  EXPECT_EQ(s.history(), p);
  EXPECT_EQ(s.stats().prefillTokens, p.size());
}

}  // namespace
}  // namespace k3test::model
