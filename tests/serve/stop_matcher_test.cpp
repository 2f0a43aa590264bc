// Stop strings over streamed text: split at every possible token boundary,
// the emitted text is always the text before the first stop, never a piece of it.
#include <gtest/gtest.h>

#include "k3/serve/stop_matcher.h"

namespace {

using k3::serve::StopMatcher;

// Feeds `text` in pieces of `step` bytes; returns everything emitted.
std::string run(const std::vector<std::string>& stops, const std::string& text, size_t step, bool* stopped = nullptr) {
  StopMatcher m(stops);
  std::string out;
  for (size_t i = 0; i < text.size() && !m.stopped(); i += step) out += m.push(text.substr(i, step));
  out += m.flush();
  if (stopped) *stopped = m.stopped();
  return out;
}

TEST(StopMatcher, EveryChunkingGivesTheTextBeforeTheFirstStop) {
  const std::string text = "Hello wor, world! The end.";
  for (size_t step = 1; step <= text.size(); ++step) {
    bool stopped = false;
    EXPECT_EQ(run({"world"}, text, step, &stopped), "Hello wor, ") << step;
    EXPECT_TRUE(stopped);
    EXPECT_EQ(run({"end.", "wor,"}, text, step), "Hello ") << step;  // the earliest of several
    EXPECT_EQ(run({"absent"}, text, step, &stopped), text) << step;
    EXPECT_FALSE(stopped);
  }
}

TEST(StopMatcher, HoldsBackAPossibleStartAndReleasesItWhenItCannotMatch) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.push("abc ST"), "abc ");  // "ST" could start STOP
  EXPECT_EQ(m.push("O"), "");
  EXPECT_EQ(m.push("P?"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("more"), "");
  StopMatcher n({"STOP"});
  EXPECT_EQ(n.push("xSTO"), "x");
  EXPECT_EQ(n.push("NE"), "STONE");
  EXPECT_EQ(n.push("S"), "");
  EXPECT_EQ(n.flush(), "S");
  EXPECT_FALSE(n.stopped());
}

TEST(StopMatcher, OverlappingPrefixesAndEmptyStops) {
  EXPECT_EQ(run({"aab"}, "aaaab", 1), "aa");
  EXPECT_EQ(run({"", "b"}, "aab", 1), "aa");
  EXPECT_EQ(run({}, "plain", 2), "plain");
}

}  // namespace
