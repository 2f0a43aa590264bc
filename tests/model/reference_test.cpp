// k3-run's teacher-forced logits against the independent numpy reference
// (scripts/k3_ref.py on the SOURCE snapshot), on containers repacked with
// --bits 16 (BF16 kept): rel-L2 ≤ 1e-4 at every position, argmax agreement 100 %.
#include <zstd.h>

#include "model_fixtures.h"

namespace k3test::model {
namespace {

void expectMatchesReference(const std::string& preset, size_t positions) {
  const std::string dir = container(preset, 16);
  auto w = k3::model::ModelWeights::open(dir);
  const size_t V = static_cast<size_t>(w->config().vocabSize);
  const auto ids = testIds(positions, static_cast<uint32_t>(V - 256));
  const std::string out = freshDir("ref-" + preset) + "/logits.f32";
  RunResult r = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", out, "--threads", "2"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::vector<float> got = readF32(out);
  const std::vector<float> ref = referenceLogits(preset, 1, ids);
  ASSERT_EQ(got.size(), positions * V);
  ASSERT_EQ(ref.size(), positions * V);
  double worst = 0;
  for (size_t p = 0; p < positions; ++p) {
    const double rel = relL2(&got[p * V], &ref[p * V], V);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-4) << preset << " position " << p;
    EXPECT_EQ(argmaxOf(&got[p * V], V), argmaxOf(&ref[p * V], V)) << preset << " position " << p;
  }
  std::printf("[measured] %s --bits 16 vs k3_ref: worst rel-L2 %.3g over %zu positions\n", preset.c_str(), worst,
              positions);
}

TEST(ModelReference, TinyBits16MatchesNumpyReference) { expectMatchesReference("tiny", 40); }

TEST(ModelReference, SmallBits16MatchesNumpyReference) { expectMatchesReference("small", 24); }

TEST(ModelReference, ZstdLogitsDecompressToThePlainFile) {
  const std::string dir = container("tiny", 16);
  const auto ids = testIds(9, 500);
  const std::string tmp = freshDir("zst");
  ASSERT_EQ(runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/l.f32"}).exitCode, 0);
  RunResult r = runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/l.f32.zst"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const std::string plain = readFile(tmp + "/l.f32"), packed = readFile(tmp + "/l.f32.zst");
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  std::string unpacked;
  if (size == ZSTD_CONTENTSIZE_UNKNOWN) {  // streamed frame: decompress incrementally
    ZSTD_DCtx* d = ZSTD_createDCtx();
    ZSTD_inBuffer in{packed.data(), packed.size(), 0};
    std::vector<char> buf(1 << 16);
    while (in.pos < in.size) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      const size_t rc = ZSTD_decompressStream(d, &o, &in);
      ASSERT_FALSE(ZSTD_isError(rc));
      unpacked.append(buf.data(), o.pos);
    }
    ZSTD_freeDCtx(d);
  } else {
    unpacked.resize(size);
    ASSERT_EQ(ZSTD_decompress(unpacked.data(), size, packed.data(), packed.size()), size);
  }
  EXPECT_EQ(unpacked, plain);
  EXPECT_EQ(plain.size(), ids.size() * 768 * 4);
}

TEST(ModelReference, IdsFromAFileEqualIdsOnTheCommandLine) {
  const std::string dir = container("tiny", 16);
  const auto ids = testIds(6, 500);
  const std::string tmp = freshDir("idsfile");
  std::string spaced;
  for (int32_t id : ids) spaced += std::to_string(id) + "\n";
  writeFile(tmp + "/ids.txt", spaced);
  ASSERT_EQ(runTool("k3-run", {dir, "--ids", tmp + "/ids.txt", "--logits-out", tmp + "/a.f32"}).exitCode, 0);
  ASSERT_EQ(runTool("k3-run", {dir, "--ids", idsText(ids), "--logits-out", tmp + "/b.f32"}).exitCode, 0);
  EXPECT_EQ(readFile(tmp + "/a.f32"), readFile(tmp + "/b.f32"));
}

}  // namespace
}  // namespace k3test::model
