// linear(pool, {jobs}, n): several products in one fork-join give, for every
// job, exactly the bits of its own linear() call, whatever the pool size, the
// formats mixed in one call, or whether the jobs share an input.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "k3/io/thread_pool.h"
#include "k3/model/linear.h"

namespace {

using k3::model::LinearJob;
using k3::codec::WeightFormat;
using k3::codec::WeightView;

struct Matrix {
  std::vector<uint8_t> data, scales;
  WeightView view;
};

// Random weights of `format` (raw bytes: every byte pattern is a valid int8
// or e2m1 pair; MXFP4 scales kept near 2^0, int8 row scales small).
Matrix randomMatrix(WeightFormat format, size_t rows, size_t cols, bool int8Act, std::mt19937& rng) {
  Matrix m;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> f(-1.0f, 1.0f);
  m.view.format = format;
  m.view.rows = rows;
  m.view.cols = cols;
  m.view.int8Activations = int8Act;
  switch (format) {
    case WeightFormat::F32: {
      m.data.resize(rows * cols * 4);
      for (size_t i = 0; i < rows * cols; ++i) {
        const float v = f(rng);
        std::memcpy(&m.data[i * 4], &v, 4);
      }
      break;
    }
    case WeightFormat::I8Row: {
      m.data.resize(rows * cols);
      for (auto& b : m.data) b = static_cast<uint8_t>(byte(rng) % 255 + 1);  // no -128
      m.scales.resize(rows * 4);
      for (size_t r = 0; r < rows; ++r) {
        const float s = 0.01f + 0.001f * static_cast<float>(r % 7);
        std::memcpy(&m.scales[r * 4], &s, 4);
      }
      break;
    }
    case WeightFormat::MXFP4: {
      m.data.resize(rows * cols / 2);
      for (auto& b : m.data) b = static_cast<uint8_t>(byte(rng));
      m.scales.resize(rows * cols / 32);
      for (auto& s : m.scales) s = static_cast<uint8_t>(124 + byte(rng) % 6);
      break;
    }
    default:
      ADD_FAILURE() << "format not covered";
  }
  m.view.data = m.data.data();
  m.view.scales = m.scales.empty() ? nullptr : m.scales.data();
  return m;
}

TEST(LinearJobs, EachJobHasTheBitsOfItsOwnCall) {
  std::mt19937 rng(11);
  const size_t D = 256, D2 = 96;
  for (bool int8Act : {false, true}) {
    // Shared input for the first three (rows not multiples of the 16-row
    // grain), a different input and width for the last.
    Matrix a = randomMatrix(WeightFormat::MXFP4, 40, D, int8Act, rng);
    Matrix b = randomMatrix(WeightFormat::I8Row, 77, D, int8Act, rng);
    Matrix c = randomMatrix(WeightFormat::F32, 5, D, int8Act, rng);
    Matrix d = randomMatrix(WeightFormat::I8Row, 33, D2, int8Act, rng);
    for (size_t n : {1, 3}) {
      std::vector<float> X(n * D), X2(n * D2);
      std::normal_distribution<float> g(0.0f, 1.0f);
      for (auto& v : X) v = g(rng);
      for (auto& v : X2) v = g(rng);
      for (size_t threads : {1, 2, 3}) {
        SCOPED_TRACE(testing::Message() << "int8=" << int8Act << " n=" << n << " threads=" << threads);
        k3::ThreadPool pool(threads);
        std::vector<float> ya(n * 40), yb(n * 77), yc(n * 5), yd(n * 33);
        k3::model::linear(pool, {LinearJob{&a.view, X.data(), ya.data()}, LinearJob{&b.view, X.data(), yb.data()},
                                 LinearJob{&c.view, X.data(), yc.data()}, LinearJob{&d.view, X2.data(), yd.data()}},
                          n);
        std::vector<float> ra(ya.size()), rb(yb.size()), rc(yc.size()), rd(yd.size());
        k3::model::linear(pool, a.view, X.data(), n, ra.data());
        k3::model::linear(pool, b.view, X.data(), n, rb.data());
        k3::model::linear(pool, c.view, X.data(), n, rc.data());
        k3::model::linear(pool, d.view, X2.data(), n, rd.data());
        EXPECT_EQ(0, std::memcmp(ya.data(), ra.data(), ya.size() * 4));
        EXPECT_EQ(0, std::memcmp(yb.data(), rb.data(), yb.size() * 4));
        EXPECT_EQ(0, std::memcmp(yc.data(), rc.data(), yc.size() * 4));
        EXPECT_EQ(0, std::memcmp(yd.data(), rd.data(), yd.size() * 4));
        // Not trivially equal: the products differ from zero.
        float mag = 0.0f;
        for (float v : ya) mag += v * v;
        EXPECT_GT(mag, 0.0f);
      }
    }
  }
}

}  // namespace
