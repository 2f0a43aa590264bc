// Teacher-forced scoring (k3-run --ids / --perplexity) against expectations
// computed here: the NLL of hand-made logits by the definition, and a
// session's summed NLL and argmax recomputed in long double from logits fed
// one token at a time.
#include <cmath>
#include <limits>

#include "k3/model/teacher_forcing.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::nextTokenNll;

TEST(TeacherForcing, NllOfUniformLogitsIsLogVocab) {
  const std::vector<float> l(50, 0.25f);
  for (size_t t : {size_t{0}, size_t{17}, size_t{49}}) EXPECT_NEAR(nextTokenNll(l.data(), l.size(), t), std::log(50.0), 1e-12);
}

TEST(TeacherForcing, NllIsMinusLogSoftmax) {
  // softmax([0, ln 3]) = [1/4, 3/4].
  const std::vector<float> l = {0.0f, static_cast<float>(std::log(3.0))};
  EXPECT_NEAR(nextTokenNll(l.data(), 2, 0), std::log(4.0), 1e-6);
  EXPECT_NEAR(nextTokenNll(l.data(), 2, 1), std::log(4.0 / 3.0), 1e-6);
}

TEST(TeacherForcing, LargeLogitsDoNotOverflow) {
  // exp(1000) overflows a double; shifted by the maximum it is exact: the
  // winner's NLL is log(1 + e^-1), the loser's 1 + that.
  const std::vector<float> l = {1000.0f, 999.0f};
  const double want = std::log1p(std::exp(-1.0));
  EXPECT_NEAR(nextTokenNll(l.data(), 2, 0), want, 1e-9);
  EXPECT_NEAR(nextTokenNll(l.data(), 2, 1), 1.0 + want, 1e-9);
}

TEST(TeacherForcing, PerplexityIsExpOfTheMeanNll) {
  k3::model::TeacherForcedResult r;
  r.nll = 6.0;
  r.predicted = 3;
  EXPECT_NEAR(r.perplexity(), std::exp(2.0), 1e-12);
}

// teacherForce with a chunk of 5 over 13 ids: the scored sum and the argmax
// equal what the logits of a one-token-at-a-time session say, position p
// scored by the id at p + 1 and the last position not scored.
TEST(TeacherForcing, ScoresEveryNextIdAcrossChunks) {
  auto w = k3::model::ModelWeights::open(container("tiny", 16));
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const std::vector<int32_t> ids = testIds(13, static_cast<uint32_t>(V) - 300, 11);
  const std::vector<float> logits = teacherForced(*w, ids, 1, 1, 0, 1);

  long double want = 0;
  for (size_t p = 0; p + 1 < ids.size(); ++p) {
    const float* l = &logits[p * V];
    long double z = 0;
    for (size_t i = 0; i < V; ++i) z += std::exp(static_cast<long double>(l[i]));
    want += std::log(z) - l[static_cast<size_t>(ids[p + 1])];
  }

  k3::model::SessionOptions o;
  o.chunk = 5;
  o.threads = 1;
  o.maxContext = ids.size();
  k3::model::Session s(*w, o);
  const k3::model::TeacherForcedResult r = k3::model::teacherForce(s, ids, nullptr, true);
  EXPECT_EQ(r.positions, ids.size());
  EXPECT_EQ(r.predicted, ids.size() - 1);
  EXPECT_NEAR(r.nll, static_cast<double>(want), 1e-6 * static_cast<double>(want));
  ASSERT_EQ(r.argmax.size(), ids.size());
  for (size_t p = 0; p < ids.size(); ++p) EXPECT_EQ(static_cast<size_t>(r.argmax[p]), argmaxOf(&logits[p * V], V)) << p;

  k3::model::Session unscored(*w, o);
  const k3::model::TeacherForcedResult u = k3::model::teacherForce(unscored, ids, nullptr, false);
  EXPECT_EQ(u.predicted, 0u);
  EXPECT_EQ(u.nll, 0.0);
  EXPECT_EQ(u.argmax, r.argmax);
}

}  // namespace
}  // namespace k3test::model
