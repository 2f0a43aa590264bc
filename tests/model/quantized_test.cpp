// How far --bits 8 / --bits 4 containers move the logits from the BF16
// (--bits 16) container. The synthetic models are random, so quantization
// noise is amplified by near-tied routing (k3_ref reports routing margins
// ~1e-5) and by the AttnRes softmax; the bounds are the figures measured on
// this code (see the printed [measured] lines) with margin, so a broken
// quantized path (wrong scale, wrong nibble order) still fails them.
#include "model_fixtures.h"

namespace k3test::model {
namespace {

Agreement measure(const std::string& preset, int bits, const std::vector<std::string>& extra = {}) {
  auto base = k3::model::ModelWeights::open(container(preset, 16));
  auto quant = k3::model::ModelWeights::open(container(preset, bits, 1, extra));
  const size_t V = static_cast<size_t>(base->config().vocabSize);
  const auto ids = testIds(48, static_cast<uint32_t>(V - 256));
  const Agreement a = compare(teacherForced(*quant, ids, 16), teacherForced(*base, ids, 16), V);
  std::string flags;
  for (const auto& e : extra) flags += " " + e;
  std::printf("[measured] %s --bits %d%s vs --bits 16: rel-L2 max %.4f mean %.4f, argmax agreement %.3f\n",
              preset.c_str(), bits, flags.c_str(), a.maxRel, a.meanRel, a.argmax);
  return a;
}

TEST(ModelQuantized, TinyBits8AgainstBits16) {
  const Agreement a = measure("tiny", 8);  // measured: mean 0.156, argmax 0.729
  EXPECT_GT(a.meanRel, 0.0);
  EXPECT_LE(a.meanRel, 0.30);
  EXPECT_GE(a.argmax, 0.55);
}

TEST(ModelQuantized, TinyBits4AgainstBits16) {
  const Agreement a = measure("tiny", 4);  // measured: mean 0.798, argmax 0.146
  EXPECT_LE(a.meanRel, 1.0);
  EXPECT_GE(a.argmax, 0.06);
}

// Only MLA projections and the head int8: few routing flips, small drift.
TEST(ModelQuantized, TinyInt8HeadAndMlaOnlyIsClose) {
  const Agreement a = measure("tiny", 16, {"--mla-bits", "8", "--head-bits", "8"});  // measured: mean 0.0076, argmax 0.958
  EXPECT_GT(a.meanRel, 0.0);
  EXPECT_LE(a.meanRel, 0.02);
  EXPECT_GE(a.argmax, 0.85);
}

TEST(ModelQuantized, SmallBits8AndBits4AgainstBits16) {
  const Agreement a8 = measure("small", 8);  // measured: mean 0.760, argmax 0.167
  const Agreement a4 = measure("small", 4);  // measured: mean 1.096, argmax 0.021
  EXPECT_LE(a8.meanRel, 0.95);
  EXPECT_LE(a4.meanRel, 1.35);
  EXPECT_LE(a8.meanRel, a4.meanRel);  // fewer bits, more drift
}

}  // namespace
}  // namespace k3test::model
