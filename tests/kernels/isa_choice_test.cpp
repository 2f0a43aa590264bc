// The kernels' ISA choice as the apps hand it down: names parse strictly, and
// once the kernels have chosen, a different ceiling is refused rather than
// silently ignored (the same one is accepted).
#include <gtest/gtest.h>

#include "k3/io/error.h"
#include "k3/kernels/cpu_features.h"

namespace {

using k3::kernels::Isa;

TEST(IsaChoice, NamesParseStrictly) {
  EXPECT_EQ(k3::kernels::parseIsaName("scalar", "--isa"), Isa::Scalar);
  EXPECT_EQ(k3::kernels::parseIsaName("avx2", "--isa"), Isa::Avx2);
  EXPECT_EQ(k3::kernels::parseIsaName("avx512", "--isa"), Isa::Avx512);
  for (const char* bad : {"", "AVX2", "avx", "avx2 ", "sse4"}) {
    try {
      k3::kernels::parseIsaName(bad, "K3_ISA");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Usage);
      EXPECT_EQ(std::string(e.what()), std::string("K3_ISA: '") + bad + "' is not an instruction set (scalar, avx2 or avx512)");
    }
  }
}

TEST(IsaChoice, FixedAtTheFirstQuery) {
  const Isa chosen = k3::kernels::bestIsa();  // no limit given in this process: the best supported
  EXPECT_TRUE(k3::kernels::isaSupported(chosen));
  for (Isa better : {Isa::Avx2, Isa::Avx512}) {
    if (k3::kernels::isaSupported(better)) {
      EXPECT_GE(static_cast<int>(chosen), static_cast<int>(better));
    }
  }
  EXPECT_NO_THROW(k3::kernels::limitIsa(chosen));
  if (chosen != Isa::Scalar) {
    EXPECT_THROW(k3::kernels::limitIsa(Isa::Scalar), k3::Error);
    EXPECT_EQ(k3::kernels::bestIsa(), chosen);
  }
}

}  // namespace
