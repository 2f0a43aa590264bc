// The AVX-512 kernels compiled against a scalar model of the intrinsics
// (avx512_emu.h) and checked like the real paths: vs the double oracle, and
// matmul == per-vector matvec bit for bit. This runs everywhere, so the lane
// and index logic is tested even on CPUs without AVX-512 (where the real
// avx512 path cannot run); on AVX-512 CPUs matvec_test checks the real one too.
//
// The kernel sources are included here with namespace avx512 renamed to
// avx512_emu; they must come first so matvec_kernels.h sees the rename.
#define K3_AVX512_EMULATION "kernels/avx512_emu.h"
#define avx512 avx512_emu
#include "k3/kernels/act_q8_avx512.cpp"
#include "k3/kernels/act_q8_i8_avx512.cpp"
#include "k3/kernels/act_quantize_avx512.cpp"
#include "k3/kernels/matvec_avx512.cpp"
#undef avx512

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "k3/codec/bf16.h"
#include "k3/kernels/act_q8.h"
#include "kernels/weight_fixtures.h"

namespace {

using namespace k3::codec;
using namespace k3::kernels;
namespace kernels = k3::kernels;

constexpr double kF32DotRelTol = 1e-5;  // as in matvec_test.cpp
constexpr float kSentinel = 12345.0f;
constexpr size_t kRows = 37;

struct Case {
  WeightFormat format;
  std::vector<size_t> cols;
};
const Case kCases[] = {
    {WeightFormat::F32, {1, 7, 100, 256, 1001}},
    {WeightFormat::BF16, {1, 7, 100, 256, 1001}},
    {WeightFormat::I8Row, {1, 7, 100, 256, 1001}},
    {WeightFormat::I4G64, {64, 192, 1088}},
    {WeightFormat::MXFP4, {32, 96, 384, 544, 1088}},
};

}  // namespace

TEST(Avx512Emulated, MatvecMatchesOracleAndMatmulIsBitIdentical) {
  for (const Case& c : kCases)
    for (size_t cols : c.cols) {
      SCOPED_TRACE(std::string(weightFormatName(c.format)) + " cols=" + std::to_string(cols));
      auto t = k3test::makeWeight(c.format, kRows, cols, cols * 7 + size_t(c.format));
      const size_t n = 6;  // one group of 4 vectors plus a remainder of 2
      auto X = k3test::uniformFloats(n * cols, cols + 3);
      std::vector<float> Y(n * kRows, kSentinel);
      avx512_emu::matmul(t.view, X.data(), n, Y.data(), 1, 36);
      for (size_t v = 0; v < n; ++v) {
        auto o = k3test::oracle(t.view, X.data() + v * cols);
        std::vector<float> y(kRows, kSentinel);
        avx512_emu::matmul(t.view, X.data() + v * cols, 1, y.data(), 1, 36);
        for (size_t r = 0; r < kRows; ++r) {
          if (r < 1 || r >= 36) {
            ASSERT_EQ(y[r], kSentinel);
            ASSERT_EQ(Y[v * kRows + r], kSentinel);
            continue;
          }
          ASSERT_NEAR(double(y[r]), o.exact[r], kF32DotRelTol * o.absSum[r] + 1e-30) << "v " << v << " row " << r;
          ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(y[r])) << "v " << v << " row " << r;
        }
      }
    }
}

// An emulated IDOT kernel on `format` weights (cols 32..1088: 1, 2, 3, 8, 12,
// 16, 17, 20, 32, 34 groups; MXFP4 packs 16-row blocks of 8, 12, 17, 20 and
// 34, and takes 16 and 32 a whole chunk at a time; 4608: 144 groups, which
// the int8-row kernel takes in two column blocks for 5 vectors), rows [r0, r1) of kRows:
// each vector vs the oracle, rows outside untouched, and the 5-vector matmul
// == per-vector calls bit for bit.
// `tweak` may edit the weight bytes first.
template <class Kernel, class Tweak>
void checkEmulatedQ8(WeightFormat format, size_t seed, size_t r0, size_t r1, Kernel kernel, Tweak tweak) {
  for (size_t cols : {32, 64, 96, 256, 384, 512, 544, 640, 1024, 1088, 4608}) {
    SCOPED_TRACE("cols=" + std::to_string(cols));
    auto t = k3test::makeWeight(format, kRows, cols, cols + seed);
    tweak(t);
    const size_t n = 5, groups = cols / 32;
    auto X = k3test::uniformFloats(n * cols, cols + seed + 1);
    std::vector<int8_t> Xq(n * cols);
    std::vector<float> Xs(n * groups);
    quantizeActivationsQ8_32(kernels::Isa::Scalar, X.data(), n * cols, Xq.data(), Xs.data());
    std::vector<float> Y(n * kRows, kSentinel);
    kernel(t.view, Xq.data(), Xs.data(), n, Y.data(), r0, r1);
    for (size_t v = 0; v < n; ++v) {
      auto o = k3test::q8Oracle(t, Xq.data() + v * cols, Xs.data() + v * groups);
      std::vector<float> y(kRows, kSentinel);
      kernel(t.view, Xq.data() + v * cols, Xs.data() + v * groups, 1, y.data(), r0, r1);
      for (size_t r = 0; r < kRows; ++r) {
        if (r < r0 || r >= r1) {
          ASSERT_EQ(y[r], kSentinel);
          ASSERT_EQ(Y[v * kRows + r], kSentinel);
          continue;
        }
        ASSERT_NEAR(double(y[r]), o.exact[r], 1e-5 * o.absSum[r] + 1e-30) << "v " << v << " row " << r;
        ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(y[r])) << "v " << v << " row " << r;
      }
    }
  }
}

TEST(Avx512Emulated, Mxfp4Q8MatchesOracleAndMatmulIsBitIdentical) {
  checkEmulatedQ8(WeightFormat::MXFP4, 17, 0, kRows, avx512_emu::matmulMxfp4Q8, [](auto&) {});
}

TEST(Avx512Emulated, I8RowQ8MatchesOracleAndMatmulIsBitIdentical) {
  checkEmulatedQ8(WeightFormat::I8Row, 19, 1, 36, avx512_emu::matmulI8Q8, [](auto& t) {
    t.data[5] = 0x80;  // q = -128 (never written by the quantizer) is still exact
  });
}

// The sixteen-group activation quantiser gives the scalar bytes: signed
// zeros, ties at .5, values that saturate, a NaN (ignored by the max,
// quantised to 127), an infinity (scale inf, every value of its group NaN
// times 0), all-zero and tiny groups (scale floor); 1-40 groups, so both
// the sixteen-group path and the AVX2 tail run.
TEST(Avx512Emulated, ActivationQuantiserGivesTheScalarBytes) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t groups : {1, 15, 16, 17, 33, 40}) {
    std::vector<float> x(groups * 32);
    for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i % 7) * 3 - 9);
    x[0] = -0.0f;
    x[1] = 0.5f;
    if (groups > 2) {
      for (size_t i = 32; i < 64; ++i) x[i] = 0.0f;            // all zero
      x[64] = std::numeric_limits<float>::quiet_NaN();  // in each half of a group
      x[64 + 20] = std::numeric_limits<float>::quiet_NaN();
      x[65] = 127.0f * 2.5f;                                   // ties after scaling
      x[66] = -127.0f * 2.5f;
    }
    if (groups > 16) {
      x[16 * 32 + 3] = std::numeric_limits<float>::infinity();
      for (size_t i = 15 * 32; i < 16 * 32; ++i) x[i] = 1e-30f;  // tiny: scale floor
    }
    std::vector<int8_t> qs(x.size()), qe(x.size());
    std::vector<float> ss(groups), se(groups);
    quantizeActivationsQ8_32(kernels::Isa::Scalar, x.data(), x.size(), qs.data(), ss.data());
    avx512_emu::quantizeActivationsQ8_32(x.data(), x.size(), qe.data(), se.data());
    EXPECT_EQ(qs, qe) << groups << " groups";
    for (size_t g = 0; g < groups; ++g) EXPECT_EQ(f32ToBits(ss[g]), f32ToBits(se[g])) << "group " << g << " of " << groups;
  }
}
