// Continuous batching's promise (issue 31): a sequence's logits do not depend
// on the batch it ran in. Rows of several sequences in one forward — prefill
// pieces of different lengths beside single decode tokens, sequences joining
// late and leaving early, some rows with logits and some without — give
// every sequence exactly the bits of its own teacher-forced run alone.
#include "k3/io/error.h"
#include "k3/model/model_runner.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::SequenceRows;
using k3::model::SequenceState;

struct Stream {
  std::vector<int32_t> ids;
  size_t joinsAt;  // first step it contributes rows to
  size_t piece;    // rows it asks for per step
  size_t fed = 0;
};

void expectBatchedEqualsSolo(const std::string& preset, bool int8) {
  k3::model::WeightOptions wo;
  wo.int8Activations = int8;
  auto w = k3::model::ModelWeights::open(container(preset, 8), wo);
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const uint32_t base = static_cast<uint32_t>(V - 256);
  std::vector<Stream> streams = {{testIds(23, base, 1), 0, 5},
                                 {testIds(9, base, 2), 0, 1},
                                 {testIds(17, base, 3), 2, 3},
                                 {testIds(6, base, 4), 5, 2}};
  const std::string what = preset + (int8 ? " int8" : " f32");
  std::vector<std::vector<float>> solo;
  for (const Stream& s : streams) solo.push_back(teacherForced(*w, s.ids, 1));  // decode steps alone

  const size_t maxRows = 8;
  k3::model::ModelRunner runner(*w, {2, maxRows, 64, 0, 1.0f});
  std::vector<SequenceState> states;
  for (size_t i = 0; i < streams.size(); ++i) states.emplace_back(w->config(), 64);
  std::vector<float> logits(maxRows * V);
  size_t checkedRows = 0;
  for (size_t step = 0;; ++step) {
    // Every stream that has joined and has tokens left contributes up to its
    // piece while rows remain; which rows get logits rotates over none, the
    // last and all.
    std::vector<SequenceRows> batch;
    std::vector<size_t> who;
    size_t rows = 0;
    bool left = false;
    for (size_t i = 0; i < streams.size(); ++i) {
      Stream& s = streams[i];
      if (s.fed == s.ids.size()) continue;
      left = true;
      if (step < s.joinsAt || rows == maxRows) continue;
      const size_t n = std::min({s.piece, s.ids.size() - s.fed, maxRows - rows});
      const size_t mode = (step + i) % 3;
      batch.push_back({&states[i], std::span<const int32_t>(s.ids).subspan(s.fed, n), mode == 0 ? 0 : mode == 1 ? 1 : n});
      who.push_back(i);
      rows += n;
    }
    if (!left) break;
    ASSERT_FALSE(batch.empty());
    runner.run(batch, logits.data());
    size_t row = 0;
    for (size_t b = 0; b < batch.size(); ++b) {
      Stream& s = streams[who[b]];
      const size_t n = batch[b].ids.size();
      for (size_t k = 0; k < batch[b].logitRows; ++k, ++row) {
        const size_t pos = s.fed + n - batch[b].logitRows + k;
        EXPECT_EQ(std::memcmp(&logits[row * V], &solo[who[b]][pos * V], V * sizeof(float)), 0)
            << what << ": stream " << who[b] << " position " << pos << " at step " << step;
        ++checkedRows;
      }
      s.fed += n;
      EXPECT_EQ(states[who[b]].logitsCurrent, batch[b].logitRows > 0);
    }
  }
  EXPECT_GT(checkedRows, 20u);
  for (size_t i = 0; i < streams.size(); ++i) {
    EXPECT_EQ(states[i].tokens, streams[i].ids) << what;
    EXPECT_EQ(states[i].position(), streams[i].ids.size());
  }
}

TEST(ModelBatching, TinyRowsOfManySequencesEqualTheirSoloRuns) { expectBatchedEqualsSolo("tiny", false); }

TEST(ModelBatching, SmallRowsOfManySequencesEqualTheirSoloRuns) {
  expectBatchedEqualsSolo("small", false);
  expectBatchedEqualsSolo("small", true);
}

// A batch is checked whole before any sequence's state changes.
TEST(ModelBatching, BadBatchChangesNoState) {
  auto w = k3::model::ModelWeights::open(container("tiny", 8));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  k3::model::ModelRunner runner(*w, {2, 4, 8, 0, 1.0f});
  SequenceState a(w->config(), 8), b(w->config(), 8);
  const std::vector<int32_t> ok = {5, 6, 7}, bad = {9, static_cast<int32_t>(V)}, longer = {1, 2, 3, 4, 5, 6};
  std::vector<float> logits(4 * V);
  const std::vector<float> before = a.kda[0].S;  // layer 0 is a KDA layer in every preset
  for (auto batch : {std::vector<SequenceRows>{{&a, ok, 1}, {&b, bad, 1}},      // id outside the vocabulary
                     std::vector<SequenceRows>{{&a, ok, 1}, {&a, ok, 1}},       // one sequence twice
                     std::vector<SequenceRows>{{&a, ok, 1}, {&b, longer, 0}}}) {  // more rows than the runner's 4
    EXPECT_THROW(runner.run(batch, logits.data()), k3::Error);
    EXPECT_TRUE(a.tokens.empty());
    EXPECT_TRUE(b.tokens.empty());
    EXPECT_EQ(a.kda[0].S, before);
  }
  a.tokens.assign(6, 1);  // as if 6 of the 8 positions were used
  EXPECT_THROW(runner.run(std::vector<SequenceRows>{{&a, ok, 1}}, logits.data()), k3::Error);  // past --ctx
}

}  // namespace
}  // namespace k3test::model
