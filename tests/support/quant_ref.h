// The quantizer tests' oracle: scripts/quant_ref.py (independent numpy, float32
// arithmetic as spec 5.3 / 5.4 / 5.9 / 4 state it) run on a matrix, and the
// matrix of exact .5 ties, zero rows, tiny/subnormal/huge values and negative
// zero that both the weight (tests/codec) and activation (tests/kernels)
// quantizer tests feed it.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/isa_test_util.h"
#include "support/test_env.h"

namespace k3test {

struct NumpyResult {
  std::string q, scales;
};

inline NumpyResult runNumpy(const std::string& mode, const std::vector<float>& w, size_t rows,
                     size_t cols) {
  std::string dir = freshDir("quant_ref_" + mode);
  std::string in = dir + "/in.f32", outQ = dir + "/q.bin", outS = dir + "/s.bin";
  writeFile(in, std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  auto r = run({"/usr/bin/python3", sourceDir() + "/scripts/quant_ref.py", mode, in,
                        std::to_string(rows), std::to_string(cols), outQ, outS});
  EXPECT_EQ(r.exitCode, 0) << r.err;
  return {readFile(outQ), readFile(outS)};
}

template <class T>
inline std::string bytesOf(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// rows x cols (cols % 64 == 0), one special pattern per row, then random rows.
inline std::vector<float> trickyMatrix(size_t rows, size_t cols) {
  std::vector<float> w = uniformFloats(rows * cols, 99, -3.f, 3.f);
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

}  // namespace k3test
