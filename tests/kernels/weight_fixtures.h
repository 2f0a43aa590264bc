// Weight matrices in every stored format with random contents, and the
// double-precision oracle (from dequantizeRow) the kernel tests compare to.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/weight_view.h"
#include "support/isa_test_util.h"

namespace k3test {

using k3::codec::WeightFormat;
using k3::codec::WeightView;

// A weight matrix in a given format with owned storage.
struct TestWeight {
  std::vector<uint8_t> data, scales;
  WeightView view;
};

inline TestWeight makeWeight(WeightFormat f, size_t rows, size_t cols, uint64_t seed) {
  TestWeight t;
  size_t n = rows * cols;
  auto vals = uniformFloats(n, seed);
  switch (f) {
    case WeightFormat::F32:
      t.data.resize(n * 4);
      std::memcpy(t.data.data(), vals.data(), n * 4);
      break;
    case WeightFormat::BF16: {
      t.data.resize(n * 2);
      std::vector<uint16_t> b(n);
      for (size_t i = 0; i < n; ++i) b[i] = k3::codec::f32ToBf16(vals[i]);
      std::memcpy(t.data.data(), b.data(), n * 2);
      break;
    }
    case WeightFormat::I8Row: {
      t.data = randomBytes(n, seed);
      for (auto& b : t.data) b = b == 0x80 ? 0x81 : b;  // int8 in [-127, 127]
      auto s = uniformFloats(rows, seed + 1, 1e-3f, 2e-2f);
      t.scales.resize(rows * 4);
      std::memcpy(t.scales.data(), s.data(), rows * 4);
      break;
    }
    case WeightFormat::I4G64: {
      t.data = randomBytes(n / 2, seed);
      auto s = uniformFloats(n / 64, seed + 1, 1e-3f, 2e-1f);
      t.scales.resize(s.size() * 4);
      std::memcpy(t.scales.data(), s.data(), s.size() * 4);
      break;
    }
    case WeightFormat::MXFP4: {
      t.data = randomBytes(n / 2, seed);
      t.scales = randomBytes(n / 32, seed + 1);
      for (auto& s : t.scales) s = uint8_t(118 + s % 12);  // 2^-9 .. 2^2
      break;
    }
  }
  t.view = WeightView{f, rows, cols, t.data.data(), t.scales.empty() ? nullptr : t.scales.data()};
  return t;
}

struct Oracle {
  std::vector<double> exact, absSum;  // per row
};

inline Oracle oracle(const WeightView& w, const float* x) {
  Oracle o{std::vector<double>(w.rows), std::vector<double>(w.rows)};
  std::vector<float> row(w.cols);
  for (size_t r = 0; r < w.rows; ++r) {
    k3::codec::dequantizeRow(w, r, row.data());
    for (size_t i = 0; i < w.cols; ++i) {
      o.exact[r] += double(x[i]) * double(row[i]);
      o.absSum[r] += std::fabs(double(x[i]) * double(row[i]));
    }
  }
  return o;
}

// IDOT oracle for one activation vector: per 32-group exact integer dot of the
// codes' integer values (doubled e2m1 for MXFP4, nibble-8 for int4) and xq,
// times the group factor (MXFP4: 2^(s-127) * 0.5 * xs; int4: s[g/2] * xs),
// summed in double. absSum is sum |value * xq| * |factor|: kernels convert
// partial integer sums to f32, so cancellation inside a group counts toward
// the error bound.
// int8 rows: the weight value is q itself and the factor s[r] * xs[g].
inline Oracle q8Oracle(const TestWeight& t, const int8_t* xq, const float* xs) {
  const size_t rows = t.view.rows, cols = t.view.cols, groups = cols / 32;
  const bool mx = t.view.format == WeightFormat::MXFP4;
  const bool i8 = t.view.format == WeightFormat::I8Row;
  Oracle o{std::vector<double>(rows), std::vector<double>(rows)};
  for (size_t r = 0; r < rows; ++r)
    for (size_t g = 0; g < groups; ++g) {
      long dot = 0, absDot = 0;
      for (size_t i = 0; i < 32; ++i) {
        size_t c = g * 32 + i;
        long value;
        if (i8) {
          value = int8_t(t.data[r * cols + c]);
        } else {
          uint8_t b = t.data[r * cols / 2 + c / 2];
          int code = (c & 1) ? b >> 4 : b & 15;
          value = mx ? k3::codec::kE2M1x2[code] : code - 8;
        }
        long p = value * xq[c];
        dot += p;
        absDot += p < 0 ? -p : p;
      }
      double f;
      if (mx) {
        f = std::ldexp(0.5, int(t.scales[r * groups + g]) - 127) * xs[g];
      } else if (i8) {
        float s;
        std::memcpy(&s, &t.scales[4 * r], 4);
        f = double(s) * xs[g];
      } else {
        float s;
        std::memcpy(&s, &t.scales[4 * (r * (groups / 2) + g / 2)], 4);
        f = double(s) * xs[g];
      }
      o.exact[r] += double(dot) * f;
      o.absSum[r] += double(absDot) * std::fabs(f);
    }
  return o;
}

}  // namespace k3test
