// Quantizers byte-for-byte against scripts/quant_ref.py (independent numpy,
// float32 arithmetic as spec 5.3 / 5.4 / 5.9 / 4 state it), on inputs with
// exact .5 ties, zero rows, tiny/subnormal/huge values and negative zero.
#include "k3/codec/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "k3/io/error.h"
#include "support/isa_test_util.h"
#include "support/quant_ref.h"

using namespace k3::codec;
using k3test::bytesOf;
using k3test::runNumpy;
using k3test::trickyMatrix;
using k3test::NumpyResult;
namespace kernels = k3::kernels;

TEST(Quantize, Int8RowsBitExactWithNumpy) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{37, 192}, {5, 100}, {3, 7}}) {
    std::vector<float> w = trickyMatrix(rows > 8 ? rows : 8, cols < 64 ? 64 : cols);
    w.resize(rows * cols);  // reuse the patterns, reshaped
    NumpyResult want = runNumpy("int8", w, rows, cols);
    for (kernels::Isa isa : k3test::supportedIsas()) {
      SCOPED_TRACE(std::string(kernels::isaName(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
      std::vector<int8_t> q(rows * cols);
      std::vector<float> s(rows);
      quantizeInt8Rows(isa, w.data(), rows, cols, q.data(), s.data());
      EXPECT_EQ(bytesOf(q), want.q);
      EXPECT_EQ(bytesOf(s), want.scales);
    }
  }
}

// Each value is q * s rounded once to f32: the product of an int8 and an f32
// is exact in double, so rounding that to float is the expectation. Scales
// include a subnormal, a negative one (zero becomes -0), and one where 127 * s
// overflows to inf.
TEST(Quantize, DequantizeInt8RowsIsOneRoundedProductOnEveryIsa) {
  const float scales[] = {0.0123f, 3e-39f, -1.5f, 3e38f, 1.0f};
  const size_t rows = std::size(scales);
  for (size_t cols : {size_t(1), size_t(7), size_t(8), size_t(9), size_t(100), size_t(512)}) {
    std::vector<int8_t> q(rows * cols);
    for (size_t i = 0; i < q.size(); ++i) q[i] = int8_t(int(i * 37 % 256) - 128);
    std::vector<float> want(rows * cols);
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c)
        want[r * cols + c] = float(double(q[r * cols + c]) * double(scales[r]));
    for (kernels::Isa isa : k3test::supportedIsas()) {
      SCOPED_TRACE(std::string(kernels::isaName(isa)) + " cols " + std::to_string(cols));
      std::vector<float> out(rows * cols, 7.0f);
      dequantizeInt8Rows(isa, q.data(), scales, rows, cols, out.data());
      EXPECT_EQ(bytesOf(out), bytesOf(want));
    }
  }
}

TEST(Quantize, Int4G64BitExactWithNumpy) {
  const size_t rows = 37, cols = 192;
  std::vector<float> w = trickyMatrix(rows, cols);
  NumpyResult want = runNumpy("int4", w, rows, cols);
  for (kernels::Isa isa : k3test::supportedIsas()) {
    SCOPED_TRACE(kernels::isaName(isa));
    std::vector<uint8_t> q(rows * cols / 2);
    std::vector<float> s(rows * cols / 64);
    quantizeInt4G64(isa, w.data(), rows, cols, q.data(), s.data());
    EXPECT_EQ(bytesOf(q), want.q);
    EXPECT_EQ(bytesOf(s), want.scales);
  }
}

TEST(Quantize, Int4TiesRoundToEven) {
  // Hand-checked: max 14 gives s = 2, inv = 0.5: 14 -> 7, 5 -> 2.5 -> 2,
  // 7 -> 3.5 -> 4, -1 -> -0.5 -> 0, -13 -> -6.5 -> -6, 3 -> 1.5 -> 2.
  std::vector<float> w(64, 0.0f);
  w[0] = 14.0f, w[1] = 5.0f, w[2] = 7.0f, w[3] = -1.0f, w[4] = -13.0f, w[5] = 3.0f;
  std::vector<uint8_t> q(32);
  float s = 0;
  quantizeInt4G64(w.data(), 1, 64, q.data(), &s);
  EXPECT_EQ(s, 2.0f);
  EXPECT_EQ(q[0], 0xaf);  // u = 15, 10
  EXPECT_EQ(q[1], 0x8c);  // u = 12, 8
  EXPECT_EQ(q[2], 0xa2);  // u = 2, 10
  EXPECT_EQ(q[3], 0x88);  // zeros -> u = 8
}

TEST(Quantize, DowncastBitExactWithNumpy) {
  const size_t rows = 37, cols = 192;
  std::vector<float> w = trickyMatrix(rows, cols);
  NumpyResult want = runNumpy("downcast", w, rows, cols);
  std::vector<int8_t> q8(rows * cols);
  std::vector<float> s8(rows);
  quantizeInt8Rows(kernels::Isa::Scalar, w.data(), rows, cols, q8.data(), s8.data());
  std::vector<uint8_t> q(rows * cols / 2);
  std::vector<float> s(rows * cols / 64);
  downcastInt8ToInt4G64(q8.data(), s8.data(), rows, cols, q.data(), s.data());
  EXPECT_EQ(bytesOf(q), want.q);
  EXPECT_EQ(bytesOf(s), want.scales);
}

TEST(Quantize, RejectsBadShapes) {
  std::vector<float> w(100);
  std::vector<uint8_t> q(50);
  std::vector<float> s(2);
  EXPECT_THROW(quantizeInt4G64(w.data(), 1, 100, q.data(), s.data()), k3::Error);
}
