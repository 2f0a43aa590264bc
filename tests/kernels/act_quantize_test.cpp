// The IDOT activation quantizer (act_q8.h) byte-for-byte against
// scripts/quant_ref.py on every ISA this CPU runs.
#include <gtest/gtest.h>

#include <vector>

#include "k3/io/error.h"
#include "k3/kernels/act_q8.h"
#include "support/isa_test_util.h"
#include "support/quant_ref.h"

namespace kernels = k3::kernels;
using k3test::bytesOf;

TEST(ActQuantize, ActivationsQ8BitExactWithNumpy) {
  const size_t rows = 37, cols = 192;
  std::vector<float> w = k3test::trickyMatrix(rows, cols);
  k3test::NumpyResult want = k3test::runNumpy("act8", w, rows, cols);
  for (kernels::Isa isa : k3test::supportedIsas()) {
    SCOPED_TRACE(kernels::isaName(isa));
    std::vector<int8_t> q(rows * cols);
    std::vector<float> s(rows * cols / 32);
    kernels::quantizeActivationsQ8_32(isa, w.data(), rows * cols, q.data(), s.data());
    EXPECT_EQ(bytesOf(q), want.q);
    EXPECT_EQ(bytesOf(s), want.scales);
  }
}

TEST(ActQuantize, RejectsALengthNotAMultipleOf32) {
  std::vector<float> x(100), s(4);
  std::vector<int8_t> xq(100);
  EXPECT_THROW(kernels::quantizeActivationsQ8_32(x.data(), 100, xq.data(), s.data()), k3::Error);
}
