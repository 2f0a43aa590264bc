// Quantizers byte-for-byte against scripts/quant_ref.py (independent numpy,
// float32 arithmetic as spec 5.3 / 5.4 / 5.9 / 4 state it), on inputs with
// exact .5 ties, zero rows, tiny/subnormal/huge values and negative zero.
#include "k3/quant/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "k3/io/error.h"
#include "k3/quant/act_q8.h"
#include "quant/quant_test_util.h"
#include "support/test_env.h"

using namespace k3::quant;
namespace kernels = k3::kernels;

namespace {

struct NumpyResult {
  std::string q, scales;
};

NumpyResult runNumpy(const std::string& mode, const std::vector<float>& w, size_t rows,
                     size_t cols) {
  std::string dir = k3test::freshDir("quant_ref_" + mode);
  std::string in = dir + "/in.f32", outQ = dir + "/q.bin", outS = dir + "/s.bin";
  k3test::writeFile(in, std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  auto r = k3test::run({"/usr/bin/python3", k3test::sourceDir() + "/scripts/quant_ref.py", mode, in,
                        std::to_string(rows), std::to_string(cols), outQ, outS});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return {k3test::readFile(outQ), k3test::readFile(outS)};
}

template <class T>
std::string bytesOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// rows x cols (cols % 64 == 0), one special pattern per row, then random rows.
std::vector<float> trickyMatrix(size_t rows, size_t cols) {
  std::vector<float> w = k3test::quant::uniformFloats(rows * cols, 99, -3.f, 3.f);
  auto row = [&](size_t r) { return w.data() + r * cols; };
  for (size_t i = 0; i < cols; ++i) {
    row(0)[i] = 0.0f;                                      // all zero -> floor scale
    row(1)[i] = (i % 2) ? -0.0f : 0.0f;                    // negative zeros
    row(3)[i] = 1e-30f * float(int(i % 7) - 3);            // below the 1e-20 floor
    row(4)[i] = 1e-45f * float(i % 3);                     // subnormals
    row(5)[i] = 3.0e38f * (float(int(i % 9) - 4) / 4.0f);  // huge, finite
    row(6)[i] = (i % 64 == 5) ? 1000.0f : 1e-3f * float(i % 13);  // one outlier per group
    // int4 ties: every group's max is 7 -> s = 1, inv = 1, values k + 0.5.
    row(7)[i] = (i % 64 == 0) ? 7.0f : float(int(i % 15) - 7) + 0.5f * float(i % 2);
  }
  // Row 2: make max exactly 127 so s = 1 and the .5 values are exact ties.
  for (size_t i = 0; i < cols; ++i) row(2)[i] = float(int(i % 253) - 126) + ((i % 2) ? 0.5f : 0.0f);
  row(2)[0] = 127.0f;
  return w;
}

}  // namespace

TEST(Quantize, Int8RowsBitExactWithNumpy) {
  for (auto [rows, cols] : {std::pair<size_t, size_t>{37, 192}, {5, 100}, {3, 7}}) {
    std::vector<float> w = trickyMatrix(rows > 8 ? rows : 8, cols < 64 ? 64 : cols);
    w.resize(rows * cols);  // reuse the patterns, reshaped
    NumpyResult want = runNumpy("int8", w, rows, cols);
    for (kernels::Isa isa : k3test::quant::supportedIsas()) {
      SCOPED_TRACE(std::string(kernels::isaName(isa)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
      std::vector<int8_t> q(rows * cols);
      std::vector<float> s(rows);
      quantizeInt8Rows(isa, w.data(), rows, cols, q.data(), s.data());
      EXPECT_EQ(bytesOf(q), want.q);
      EXPECT_EQ(bytesOf(s), want.scales);
    }
  }
}

TEST(Quantize, Int4G64BitExactWithNumpy) {
  const size_t rows = 37, cols = 192;
  std::vector<float> w = trickyMatrix(rows, cols);
  NumpyResult want = runNumpy("int4", w, rows, cols);
  for (kernels::Isa isa : k3test::quant::supportedIsas()) {
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

TEST(Quantize, ActivationsQ8BitExactWithNumpy) {
  const size_t rows = 37, cols = 192;
  std::vector<float> w = trickyMatrix(rows, cols);
  NumpyResult want = runNumpy("act8", w, rows, cols);
  for (kernels::Isa isa : k3test::quant::supportedIsas()) {
    SCOPED_TRACE(kernels::isaName(isa));
    std::vector<int8_t> q(rows * cols);
    std::vector<float> s(rows * cols / 32);
    quantizeActivationsQ8_32(isa, w.data(), rows * cols, q.data(), s.data());
    EXPECT_EQ(bytesOf(q), want.q);
    EXPECT_EQ(bytesOf(s), want.scales);
  }
}

TEST(Quantize, RejectsBadShapes) {
  std::vector<float> w(100);
  std::vector<uint8_t> q(50);
  std::vector<float> s(2);
  std::vector<int8_t> xq(100);
  EXPECT_THROW(quantizeInt4G64(w.data(), 1, 100, q.data(), s.data()), k3::Error);
  EXPECT_THROW(quantizeActivationsQ8_32(w.data(), 100, xq.data(), s.data()), k3::Error);
}
