// The forward pass's phase clock (k3/model/phase_times.h): laps land in the
// phase named, the phases of a session add up to its prefill and decode
// seconds, every phase the tiny model has is seen, the experts phase's
// weight bytes match independent counts, and k3-run --json reports both
// sets.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <thread>

#include "k3/model/phase_times.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::Phase;
using k3::model::PhaseClock;
using k3::model::PhaseTimes;

TEST(PhaseTimes, LapsLandInTheirPhase) {
  PhaseTimes t;
  PhaseClock clock(&t);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  clock.lap(Phase::kKda);
  clock.lap(Phase::kHead);  // right after
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  clock.lap(Phase::kMoeExperts);
  EXPECT_GE(t[Phase::kKda], 0.003);
  EXPECT_GE(t[Phase::kHead], 0.0);
  EXPECT_GE(t[Phase::kMoeExperts], 0.002);
  EXPECT_EQ(t[Phase::kMla], 0.0);
  EXPECT_DOUBLE_EQ(t.total(), t[Phase::kKda] + t[Phase::kHead] + t[Phase::kMoeExperts]);
  PhaseClock off(nullptr);  // no times: nothing to write to, nothing happens
  off.lap(Phase::kKda);
}

TEST(PhaseTimes, NamesAreDistinct) {
  std::set<std::string> names;
  for (size_t p = 0; p < k3::model::kPhaseCount; ++p) names.insert(k3::model::phaseName(static_cast<Phase>(p)));
  EXPECT_EQ(names.size(), k3::model::kPhaseCount);
  EXPECT_EQ(names.count("?"), 0u);
}

// tiny has dense layer 0, KDA and MLA layers and MoE layers: a chunked
// prefill and decode steps see every phase, and each set of phases adds up
// to the seconds the session reports for it.
TEST(PhaseTimes, SessionPhasesAddUpToItsSeconds) {
  auto w = k3::model::ModelWeights::open(container("tiny", 8));
  k3::model::SessionOptions o;
  o.chunk = 16;
  o.threads = 2;
  k3::model::Session s(*w, o);
  const auto ids = testIds(40, static_cast<uint32_t>(w->config().vocabSize - 256), 3);
  s.feed(ids);
  for (int i = 0; i < 3; ++i) s.feed(std::span<const int32_t>(ids).subspan(static_cast<size_t>(i), 1));
  const auto& st = s.stats();
  ASSERT_EQ(st.decodeTokens, 3u);
  for (const auto& [times, seconds, what] :
       {std::tuple{st.prefillPhases, st.prefillSeconds, "prefill"}, std::tuple{st.decodePhases, st.decodeSeconds, "decode"}}) {
    SCOPED_TRACE(what);
    for (size_t p = 0; p < k3::model::kPhaseCount; ++p)
      EXPECT_GT(times.seconds[p], 0.0) << k3::model::phaseName(static_cast<Phase>(p));
    // Only the embedding lookup and the loop around Forward::run are outside
    // (the lower bound leaves room for a loaded CI machine).
    EXPECT_LE(times.total(), seconds);
    EXPECT_GE(times.total(), 0.5 * seconds);
  }
}

// The experts phase's weight bytes: a decode step routes its token to
// top-k distinct experts in every MoE layer, so it uses exactly that many
// experts' bytes per layer; a chunk of n tokens uses between top-k and
// min(n * top-k, experts) per layer, and its bytes are a whole number of
// experts.
TEST(PhaseTimes, ExpertBytesCountEachChunksUniqueExperts) {
  auto w = k3::model::ModelWeights::open(container("tiny", 8));
  const auto& c = w->config();
  k3::model::SessionOptions o;
  o.chunk = 16;
  o.threads = 2;
  k3::model::Session s(*w, o);
  const auto ids = testIds(16, static_cast<uint32_t>(c.vocabSize - 256), 5);
  s.feed(ids);
  s.feed(std::span<const int32_t>(ids).subspan(0, 1));
  int moeLayers = 0;
  for (int l = 0; l < c.numLayers; ++l) moeLayers += c.isMoeLayer(l) ? 1 : 0;
  ASSERT_GT(moeLayers, 0);
  const double expert = static_cast<double>(w->bytesPerExpert());
  const double k = c.numExpertsPerToken, E = c.numExperts;
  EXPECT_EQ(s.stats().decodePhases.expertBytes, moeLayers * k * expert);
  const double prefill = s.stats().prefillPhases.expertBytes;
  EXPECT_EQ(std::fmod(prefill, expert), 0.0);
  EXPECT_GE(prefill, moeLayers * k * expert);
  EXPECT_LE(prefill, moeLayers * std::min(16 * k, E) * expert);
  EXPECT_GT(prefill, moeLayers * k * expert);  // 16 tokens do not all pick the same experts
}

TEST(PhaseTimes, RunJsonReportsBoth) {
  RunResult r = runTool("k3-run", {container("tiny", 8), "-p", "hello there", "-n", "4", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char* key : {"\"prefill_phases_s\":{\"attn_res_mix\":", "\"decode_phases_s\":{\"attn_res_mix\":",
                          "\"moe_experts\":", "\"head\":", "\"prefill_expert_weight_bytes\":",
                          "\"decode_expert_weight_bytes\":"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
}

}  // namespace
}  // namespace k3test::model
