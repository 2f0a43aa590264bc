// matvec / matmul on every format and ISA against a double-precision oracle
// built from dequantizeRow, plus the determinism contract: on each ISA matmul
// gives exactly the bits of matvec per vector, and rows outside [r0, r1) are
// never written.
#include "k3/kernels/matvec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <initializer_list>
#include <vector>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/io/error.h"
#include "k3/kernels/act_q8.h"
#include "kernels/weight_fixtures.h"
#include "support/isa_test_util.h"

using namespace k3::codec;
using namespace k3::kernels;
namespace kernels = k3::kernels;
using k3test::makeWeight;
using k3test::oracle;
using k3test::Oracle;
using k3test::TestWeight;

namespace {

// |y - exact| <= tol * sum_i |x_i * W_i| + floor. f32 summation of <= 1100
// terms in any order stays well inside 1e-5 of the absolute sum.
constexpr double kF32DotRelTol = 1e-5;
// Q8 path: integer group dots are exact, only the per-group f32 products and
// the sum round.
constexpr double kQ8DotRelTol = 1e-5;
constexpr double kAbsFloor = 1e-30;
constexpr float kSentinel = 12345.0f;

std::vector<size_t> colsFor(WeightFormat f) {
  switch (f) {
    case WeightFormat::I4G64: return {64, 192, 1088};
    case WeightFormat::MXFP4: return {32, 96, 384, 480, 512, 544, 1024, 1088};  // 8/4-group blocks, leftovers, whole 16-group chunks
    default: return {1, 7, 100, 256, 1001};
  }
}

const WeightFormat kFormats[] = {WeightFormat::F32, WeightFormat::BF16, WeightFormat::I8Row,
                                 WeightFormat::I4G64, WeightFormat::MXFP4};

struct Range {
  size_t r0, r1;
};
const size_t kRows = 37;
const Range kRanges[] = {{0, kRows}, {3, 20}, {kRows - 1, kRows}, {5, 5}, {16, 33}};

}  // namespace

TEST(Matvec, EveryIsaAndFormatMatchesOracle) {
  for (WeightFormat f : kFormats) {
    for (size_t cols : colsFor(f)) {
      TestWeight t = makeWeight(f, kRows, cols, cols * 31 + size_t(f));
      auto x = k3test::uniformFloats(cols, cols + 5);
      Oracle o = oracle(t.view, x.data());
      for (kernels::Isa isa : k3test::supportedIsas()) {
        for (Range rg : kRanges) {
          SCOPED_TRACE(std::string(weightFormatName(f)) + " cols=" + std::to_string(cols) + " " +
                       kernels::isaName(isa) + " [" + std::to_string(rg.r0) + "," + std::to_string(rg.r1) + ")");
          std::vector<float> y(kRows, kSentinel);
          matvec(isa, t.view, x.data(), y.data(), rg.r0, rg.r1);
          for (size_t r = 0; r < kRows; ++r) {
            if (r < rg.r0 || r >= rg.r1) {
              ASSERT_EQ(y[r], kSentinel) << "row " << r << " written outside the range";
              continue;
            }
            double tol = kF32DotRelTol * o.absSum[r] + kAbsFloor;
            ASSERT_NEAR(double(y[r]), o.exact[r], tol) << "row " << r;
          }
        }
      }
    }
  }
}

// The AVX-512 4-bit kernel (MXFP4, int4) decodes each 16 columns in a
// permuted lane order and restores it before the reduction: its bits must
// be those of column-ordered lanes, modelled here from dequantizeRow with
// the kernel's arithmetic spelled out: four 16-lane accumulators over pairs
// of 32-column blocks (one pair left over: the first two), each lane an f32
// fma chain in column order, (a0 + a1) + (a2 + a3), then lanes (i, i + 8),
// (i, i + 4), (i, i + 2), (0, 1).
float columnLaneRowModel(const WeightView& w, size_t r, const float* x) {
  std::vector<float> row(w.cols);
  dequantizeRow(w, r, row.data());
  float acc[4][16] = {};
  const size_t blocks = w.cols / 32;
  size_t b = 0;
  for (; b + 2 <= blocks; b += 2)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 16; ++l) {
        const size_t c = 32 * b + 16 * size_t(k) + size_t(l);
        acc[k][l] = std::fma(row[c], x[c], acc[k][l]);
      }
  if (b < blocks)
    for (int k = 0; k < 2; ++k)
      for (int l = 0; l < 16; ++l) {
        const size_t c = 32 * b + 16 * size_t(k) + size_t(l);
        acc[k][l] = std::fma(row[c], x[c], acc[k][l]);
      }
  float s[16];
  for (int l = 0; l < 16; ++l) s[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) s[l] += s[l + width];
  return s[0];
}

// MXFP4 and int4-g64 rows of 64, 544 and 3584 columns (int4: the multiples
// of 64) through `isa`'s matmul with each of `ns` vectors: every result's
// bits must be model(view, row, vector).
template <class RowModel>
void expectFourBitMatmulIsModel(kernels::Isa isa, std::initializer_list<size_t> ns, RowModel model) {
  for (WeightFormat f : {WeightFormat::MXFP4, WeightFormat::I4G64}) {
    for (size_t cols : {size_t(64), size_t(544), size_t(3584)}) {
      if (cols % (f == WeightFormat::I4G64 ? 64 : 32)) continue;
      TestWeight t = makeWeight(f, kRows, cols, cols + 9 * size_t(f));
      for (size_t n : ns) {
        auto X = k3test::uniformFloats(n * cols, cols + n);
        std::vector<float> Y(n * kRows, kSentinel);
        matmul(isa, t.view, X.data(), n, Y.data(), 0, kRows);
        for (size_t v = 0; v < n; ++v)
          for (size_t r = 0; r < kRows; ++r)
            ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(model(t.view, r, X.data() + v * cols)))
                << weightFormatName(f) << " cols " << cols << " vector " << v << " row " << r;
      }
    }
  }
}

TEST(Matvec, Avx512FourBitRowsAreColumnOrderedLanesBitForBit) {
  if (!isaSupported(kernels::Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU (the emulated kernel is checked in avx512_emu_test)";
  expectFourBitMatmulIsModel(kernels::Isa::Avx512, {1, 3, 6}, columnLaneRowModel);
}

// The AVX2 4-bit kernel decodes each 32-column block to its integer values
// (doubled e2m1, or nibble - 8) and sums their products in a fresh chain per
// block, added times the block's factor to one 8-lane accumulator: its bits,
// modelled here from the packed nibbles with that arithmetic spelled out
// (lane l of block b: columns 32b + 8k + l, k = 0..3, mul then fma), then the
// lanes ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)). Every one of the
// 16 codes occurs, so a wrong decode table entry fails here bit for bit.
float avx2NibbleRowModel(const WeightView& w, size_t r, const float* x) {
  const auto* d = static_cast<const uint8_t*>(w.data);
  auto value = [&](size_t c) {
    const uint8_t b = d[(r * w.cols + c) / 2];
    const int n = c % 2 ? b >> 4 : b & 15;
    return float(w.format == WeightFormat::I4G64 ? n - 8 : kE2M1x2[n]);  // code 8 (-0) as +0, as the kernel
  };
  auto factor = [&](size_t b) {
    if (w.format == WeightFormat::I4G64)
      return static_cast<const float*>(w.scales)[r * (w.cols / kInt4Group) + b / 2];
    return ue8m0ToF32(static_cast<const uint8_t*>(w.scales)[r * (w.cols / kMxfp4Group) + b]) * 0.5f;
  };
  float acc[8] = {};
  for (size_t b = 0; b < w.cols / 32; ++b) {
    const float f = factor(b);
    for (int l = 0; l < 8; ++l) {
      float t = value(32 * b + l) * x[32 * b + l];
      for (int k = 1; k < 4; ++k) {
        const size_t c = 32 * b + 8 * size_t(k) + size_t(l);
        t = std::fma(value(c), x[c], t);
      }
      acc[l] = std::fma(t, f, acc[l]);
    }
  }
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

TEST(Matvec, Avx2FourBitRowsAreBlockChainsBitForBit) {
  if (!isaSupported(kernels::Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU";
  // Every tile shape: 8/4/1 rows x 1, 2 x 2, 1 x 4 and 1 x 8 vectors.
  expectFourBitMatmulIsModel(kernels::Isa::Avx2, {1, 2, 5, 8}, avx2NibbleRowModel);
}

TEST(Matmul, BitIdenticalToPerVectorMatvec) {
  for (WeightFormat f : kFormats) {
    size_t cols = f == WeightFormat::MXFP4 ? 544 : f == WeightFormat::I4G64 ? 192 : 1001;
    TestWeight t = makeWeight(f, kRows, cols, 77 + size_t(f));
    for (size_t n : {1, 2, 3, 4, 5, 7, 9}) {
      auto X = k3test::uniformFloats(n * cols, n * 13);
      for (kernels::Isa isa : k3test::supportedIsas()) {
        SCOPED_TRACE(std::string(weightFormatName(f)) + " n=" + std::to_string(n) + " " + kernels::isaName(isa));
        std::vector<float> Y(n * kRows, kSentinel);
        matmul(isa, t.view, X.data(), n, Y.data(), 3, 34);
        for (size_t v = 0; v < n; ++v) {
          std::vector<float> y(kRows, kSentinel);
          matvec(isa, t.view, X.data() + v * cols, y.data(), 3, 34);
          for (size_t r = 0; r < kRows; ++r)
            ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(y[r]))
                << "vector " << v << " row " << r;
        }
      }
    }
  }
}

TEST(Matvec, DefaultDispatchIsOneOfThePaths) {
  TestWeight t = makeWeight(WeightFormat::MXFP4, kRows, 64, 3);
  auto x = k3test::uniformFloats(64, 4);
  std::vector<float> a(kRows), b(kRows);
  matvec(t.view, x.data(), a.data(), 0, kRows);
  matvec(kernels::bestIsa(), t.view, x.data(), b.data(), 0, kRows);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
  matmul(t.view, x.data(), 1, a.data(), 0, kRows);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
}

TEST(Matvec, RejectsBadRanges) {
  TestWeight t = makeWeight(WeightFormat::F32, 4, 8, 1);
  std::vector<float> x(8), y(4);
  EXPECT_THROW(matvec(t.view, x.data(), y.data(), 2, 5), k3::Error);
  EXPECT_THROW(matvec(t.view, x.data(), y.data(), 3, 2), k3::Error);
  EXPECT_THROW(matvecMxfp4Q8(t.view, nullptr, nullptr, y.data(), 0, 4), k3::Error);  // not MXFP4
}

// IDOT: oracle in double from the quantised activations; each 32-group's
// integer dot is exact, so only the final f32 roundings differ.
TEST(MatvecQ8, EveryIsaMatchesOracleAndMatmulIsBitIdentical) {
  for (size_t cols : colsFor(WeightFormat::MXFP4)) {
    TestWeight t = makeWeight(WeightFormat::MXFP4, kRows, cols, cols + 11);
    const size_t groups = cols / 32, n = 5;
    auto X = k3test::uniformFloats(n * cols, cols + 12);
    std::vector<int8_t> Xq(n * cols);
    std::vector<float> Xs(n * groups);
    quantizeActivationsQ8_32(kernels::Isa::Scalar, X.data(), n * cols, Xq.data(), Xs.data());
    for (size_t v = 0; v < n; ++v) {
        Oracle o = k3test::q8Oracle(t, Xq.data() + v * cols, Xs.data() + v * groups);
      const std::vector<double>&exact = o.exact, &absSum = o.absSum;
      for (kernels::Isa isa : k3test::supportedIsas()) {
        SCOPED_TRACE("cols=" + std::to_string(cols) + " n=" + std::to_string(n) + " v=" + std::to_string(v) + " " +
                     kernels::isaName(isa));
        std::vector<float> y(kRows, kSentinel);
        matvecMxfp4Q8(isa, t.view, Xq.data() + v * cols, Xs.data() + v * groups, y.data(), 2, 35);
        for (size_t r = 0; r < kRows; ++r) {
          if (r < 2 || r >= 35) {
            ASSERT_EQ(y[r], kSentinel);
            continue;
          }
          ASSERT_NEAR(double(y[r]), exact[r], kQ8DotRelTol * absSum[r] + kAbsFloor) << "row " << r;
        }
        std::vector<float> Y(n * kRows, kSentinel);
        matmulMxfp4Q8(isa, t.view, Xq.data(), Xs.data(), n, Y.data(), 2, 35);
        for (size_t r = 0; r < kRows; ++r)
          ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(y[r])) << "row " << r;
      }
    }
  }
}

// The IDOT path approximates the exact f32 one (the runtime measures the
// quality cost end to end; here only a sanity bound on random data).
// `q8` is the IDOT matvec under test.
template <class Q8Matvec>
void expectCloseToExactPath(WeightFormat format, uint64_t seed, Q8Matvec q8) {
  const size_t cols = 1088;
  TestWeight t = makeWeight(format, kRows, cols, seed);
  auto x = k3test::uniformFloats(cols, seed + 1);
  std::vector<int8_t> xq(cols);
  std::vector<float> xs(cols / 32), y(kRows), yq(kRows);
  quantizeActivationsQ8_32(x.data(), cols, xq.data(), xs.data());
  matvec(t.view, x.data(), y.data(), 0, kRows);
  q8(t.view, xq.data(), xs.data(), yq.data(), 0, kRows);
  Oracle o = oracle(t.view, x.data());
  for (size_t r = 0; r < kRows; ++r) EXPECT_NEAR(yq[r], y[r], 0.01 * o.absSum[r]) << r;
}

TEST(MatvecQ8, CloseToExactPath) {
  expectCloseToExactPath(WeightFormat::MXFP4, 5, [](const WeightView& w, const int8_t* xq, const float* xs,
                                                    float* y, size_t r0, size_t r1) {
    matvecMxfp4Q8(w, xq, xs, y, r0, r1);
  });
}

// A prefill batch big enough that the AVX2 IDOT kernel re-lays the
// activations on the heap instead of the stack.
TEST(MatvecQ8, LargeBatchMatmulIsBitIdentical) {
  const size_t cols = 1088, groups = cols / 32, n = 40;
  TestWeight t = makeWeight(WeightFormat::MXFP4, kRows, cols, 21);
  auto X = k3test::uniformFloats(n * cols, 22);
  std::vector<int8_t> Xq(n * cols);
  std::vector<float> Xs(n * groups);
  quantizeActivationsQ8_32(X.data(), n * cols, Xq.data(), Xs.data());
  for (kernels::Isa isa : k3test::supportedIsas()) {
    SCOPED_TRACE(kernels::isaName(isa));
    std::vector<float> Y(n * kRows);
    matmulMxfp4Q8(isa, t.view, Xq.data(), Xs.data(), n, Y.data(), 0, kRows);
    for (size_t v = 0; v < n; ++v) {
      std::vector<float> y(kRows);
      matvecMxfp4Q8(isa, t.view, Xq.data() + v * cols, Xs.data() + v * groups, y.data(), 0, kRows);
      ASSERT_EQ(0, std::memcmp(y.data(), Y.data() + v * kRows, kRows * 4)) << "vector " << v;
    }
  }
}

// IDOT on `format` weights: every ISA vs the oracle, rows outside [2, 35)
// untouched, and matmul == matvec bits for 6 and 9 vectors (a group of 8
// and one: the AVX-512 int8-row kernel takes 8 vectors' columns in blocks
// from 2304 columns on, 6 vectors' from 3072). `tweak` may edit the weight
// bytes before the run.
template <class Tweak>
void checkQ8EveryIsa(WeightFormat format, std::initializer_list<size_t> colsList, uint64_t seed,
                     Tweak tweak) {
  for (size_t cols : colsList)
  for (size_t n : {6, 9}) {
    TestWeight t = makeWeight(format, kRows, cols, cols + seed);
    tweak(t);
    const size_t groups = cols / 32;
    auto X = k3test::uniformFloats(n * cols, cols + seed + 1);
    std::vector<int8_t> Xq(n * cols);
    std::vector<float> Xs(n * groups);
    quantizeActivationsQ8_32(kernels::Isa::Scalar, X.data(), n * cols, Xq.data(), Xs.data());
    for (kernels::Isa isa : k3test::supportedIsas()) {
      std::vector<float> Y(n * kRows, kSentinel);
      matmulQ8(isa, t.view, Xq.data(), Xs.data(), n, Y.data(), 2, 35);
      for (size_t v = 0; v < n; ++v) {
        SCOPED_TRACE("cols=" + std::to_string(cols) + " v=" + std::to_string(v) + " " + kernels::isaName(isa));
        Oracle o = k3test::q8Oracle(t, Xq.data() + v * cols, Xs.data() + v * groups);
        std::vector<float> y(kRows, kSentinel);
        matvecQ8(isa, t.view, Xq.data() + v * cols, Xs.data() + v * groups, y.data(), 2, 35);
        for (size_t r = 0; r < kRows; ++r) {
          if (r < 2 || r >= 35) {
            ASSERT_EQ(y[r], kSentinel);
            ASSERT_EQ(Y[v * kRows + r], kSentinel);
            continue;
          }
          ASSERT_NEAR(double(y[r]), o.exact[r], kQ8DotRelTol * o.absSum[r] + kAbsFloor) << "row " << r;
          ASSERT_EQ(f32ToBits(Y[v * kRows + r]), f32ToBits(y[r])) << "row " << r;
        }
      }
    }
  }
}

// int4-g64: 2, 6, 14, 18, 34 groups (blocks of 8, of 4 and leftovers); the MXFP4-only
// entry point refuses int4.
TEST(MatvecQ8, Int4EveryIsaMatchesOracleAndMatmulIsBitIdentical) {
  checkQ8EveryIsa(WeightFormat::I4G64, {64, 192, 448, 576, 1088}, 31, [](TestWeight&) {});
  TestWeight t = makeWeight(WeightFormat::I4G64, 2, 64, 1);
  std::vector<int8_t> xq(64);
  std::vector<float> xs(2), y(2);
  EXPECT_THROW(matvecMxfp4Q8(t.view, xq.data(), xs.data(), y.data(), 0, 2), k3::Error);
}

// int8 rows: 1, 3, 17, 34, 224 groups; q = -128 (outside what the quantizer
// writes) still exact; a column count that is not a multiple of 32 refused.
TEST(MatvecQ8, Int8RowEveryIsaMatchesOracleAndMatmulIsBitIdentical) {
  checkQ8EveryIsa(WeightFormat::I8Row, {32, 96, 544, 1088, 7168}, 41, [](TestWeight& t) { t.data[3] = 0x80; });
  TestWeight odd = makeWeight(WeightFormat::I8Row, 2, 48, 1);
  std::vector<int8_t> xq(64);
  std::vector<float> xs(2), y(2);
  EXPECT_THROW(matvecQ8(odd.view, xq.data(), xs.data(), y.data(), 0, 2), k3::Error);
  EXPECT_THROW(matvecMxfp4Q8(makeWeight(WeightFormat::I8Row, 2, 64, 1).view, xq.data(), xs.data(),
                             y.data(), 0, 2),
               k3::Error);
}

// The scalar reference's order for int8 rows, by hand: the row scale is
// applied last, each group's exact integer dot is scaled by its xs.
TEST(MatvecQ8, Int8RowScalarHandChecked) {
  const size_t cols = 64;
  std::vector<int8_t> q(cols, 0), xq(cols, 0);
  q[0] = 3, q[1] = -127, q[40] = -128;
  xq[0] = 5, xq[1] = 2, xq[40] = 127;
  const float scale = 0.25f, xs[2] = {0.5f, 2.0f};
  WeightView w{WeightFormat::I8Row, 1, cols, q.data(), &scale};
  float y = 0.0f;
  matvecQ8(kernels::Isa::Scalar, w, xq.data(), xs, &y, 0, 1);
  const float expect = 0.25f * (float(3 * 5 - 127 * 2) * 0.5f + float(-128 * 127) * 2.0f);
  EXPECT_EQ(y, expect);
}

TEST(MatvecQ8, Int8RowCloseToExactPath) {
  expectCloseToExactPath(WeightFormat::I8Row, 7, [](const WeightView& w, const int8_t* xq, const float* xs,
                                                    float* y, size_t r0, size_t r1) {
    matvecQ8(w, xq, xs, y, r0, r1);
  });
}

// Row ranges change with the thread count and the pool's schedule, and the
// AVX2 IDOT driver sums the lanes of 8 rows at once where it can and one row
// at a time at a range's tail (the AVX-512 MXFP4 kernel packs 16-row blocks
// of rows with 8, 12, 20 or 24 groups, and runs 16-row blocks of 16 or 32
// groups a chunk at a time): a row's bits must not depend on which. Each row alone ([r, r+1): always the one-row path) == the whole
// range, for 1 and 3 vectors.
TEST(MatvecQ8, RowRangeDoesNotChangeBits) {
  for (WeightFormat f : {WeightFormat::MXFP4, WeightFormat::I4G64, WeightFormat::I8Row}) {
    for (size_t cols : {256, 384, 512, 640, 768, 1024}) {
      TestWeight t = makeWeight(f, kRows, cols, cols + 3);
      const size_t groups = cols / 32, n = 3;
      auto X = k3test::uniformFloats(n * cols, cols + 4);
      std::vector<int8_t> Xq(n * cols);
      std::vector<float> Xs(n * groups);
      quantizeActivationsQ8_32(kernels::Isa::Scalar, X.data(), n * cols, Xq.data(), Xs.data());
      for (kernels::Isa isa : k3test::supportedIsas()) {
        SCOPED_TRACE(std::string(weightFormatName(f)) + " cols=" + std::to_string(cols) + " " + kernels::isaName(isa));
        for (size_t nv : {size_t(1), n}) {
          std::vector<float> whole(nv * kRows), alone(nv * kRows);
          matmulQ8(isa, t.view, Xq.data(), Xs.data(), nv, whole.data(), 0, kRows);
          for (size_t r = 0; r < kRows; ++r) matmulQ8(isa, t.view, Xq.data(), Xs.data(), nv, alone.data(), r, r + 1);
          ASSERT_EQ(0, std::memcmp(whole.data(), alone.data(), whole.size() * 4)) << nv << " vectors";
        }
      }
    }
  }
}
