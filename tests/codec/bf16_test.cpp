// bf16/f16 conversions: hand-checked values, RNE ties, NaN/inf/subnormals, and
// every ISA path equal to the scalar function bit for bit.
#include "k3/codec/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "support/isa_test_util.h"

using namespace k3::codec;
namespace kernels = k3::kernels;

TEST(Bf16, ToF32IsTopHalf) {
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(bf16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f32ToBits(bf16ToF32(0x8000)), 0x80000000u);
  EXPECT_TRUE(std::isinf(bf16ToF32(0x7f80)));
  EXPECT_TRUE(std::isnan(bf16ToF32(0x7fc1)));
  EXPECT_EQ(bf16ToF32(0x0001), std::ldexp(1.0f, -133));  // smallest subnormal
}

TEST(Bf16, FromF32RoundsToNearestEven) {
  EXPECT_EQ(f32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(f32ToBf16(bitsToF32(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32ToBf16(bitsToF32(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32ToBf16(bitsToF32(0x3f808001)), 0x3f81);  // above half
  EXPECT_EQ(f32ToBf16(bitsToF32(0x3f807fff)), 0x3f80);  // below half
  EXPECT_EQ(f32ToBf16(bitsToF32(0xbf818000)), 0xbf82);  // negative tie
  EXPECT_EQ(f32ToBf16(bitsToF32(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(f32ToBf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32ToBf16(-INFINITY), 0xff80);
  EXPECT_EQ(f32ToBf16(-0.0f), 0x8000);
  EXPECT_EQ(f32ToBf16(bitsToF32(0x00010000)), 0x0001);  // subnormal, exact
}

TEST(Bf16, FromF32KeepsNaN) {
  EXPECT_EQ(f32ToBf16(bitsToF32(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(f32ToBf16(bitsToF32(0x7f800001)), 0x7fc0);  // low payload only: not inf
  EXPECT_EQ(f32ToBf16(bitsToF32(0xff800001)), 0xffc0);
  EXPECT_EQ(f32ToBf16(bitsToF32(0x7fffffff)), 0x7fff);  // no carry into the sign
}

TEST(F16, HandCheckedValues) {
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));      // smallest subnormal
  EXPECT_EQ(f16ToF32(0x03ff), 1023.0f * std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToF32(0x0400), std::ldexp(1.0f, -14));      // smallest normal
  EXPECT_EQ(f16ToF32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f32ToBits(f16ToF32(0x8000)), 0x80000000u);
  EXPECT_EQ(f16ToF32(0x7c00), INFINITY);
  EXPECT_EQ(f16ToF32(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(f16ToF32(0x7e00)));
  EXPECT_TRUE(std::isnan(f16ToF32(0x7c01)));  // signalling NaN stays NaN
  EXPECT_TRUE(std::signbit(f16ToF32(0xfe00)));
}

// Independent formula: (-1)^s * (e ? (1024+m) * 2^(e-25) : m * 2^-24).
TEST(F16, AllFiniteValuesMatchFormula) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) continue;
    double mag = e ? std::ldexp(1024.0 + m, int(e) - 25) : std::ldexp(double(m), -24);
    double want = (h & 0x8000) ? -mag : mag;
    ASSERT_EQ(double(f16ToF32(uint16_t(h))), want) << "h=" << h;
    if (mag == 0) {
      ASSERT_EQ(std::signbit(f16ToF32(uint16_t(h))), bool(h & 0x8000));
    }
  }
}

TEST(Conversions, EveryIsaMatchesScalarBits) {
  std::vector<uint16_t> all(65536 + 13);  // odd length: vector loops and tails
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i * 40503u);
  std::vector<float> f32Want(all.size()), f16Want(all.size()), got(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    f32Want[i] = bf16ToF32(all[i]);
    f16Want[i] = f16ToF32(all[i]);
  }
  // f32 inputs: random bits plus ties, NaNs and infinities.
  std::vector<float> f32In;
  auto bytes = k3test::randomBytes(4 * 50001, 7);
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    uint32_t u;
    std::memcpy(&u, &bytes[i], 4);
    if (i % 16 == 0) u = (u & 0xffff0000u) | 0x8000u;  // exact tie
    f32In.push_back(bitsToF32(u));
  }
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fffffffu, 0x7f7fffffu})
    f32In.push_back(bitsToF32(u));
  std::vector<uint16_t> bfWant(f32In.size()), bfGot(f32In.size());
  for (size_t i = 0; i < f32In.size(); ++i) bfWant[i] = f32ToBf16(f32In[i]);

  for (kernels::Isa isa : k3test::supportedIsas()) {
    SCOPED_TRACE(kernels::isaName(isa));
    bf16ToF32(isa, all.data(), got.data(), all.size());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(f32ToBits(got[i]), f32ToBits(f32Want[i])) << i;
    f16ToF32(isa, all.data(), got.data(), all.size());
    for (size_t i = 0; i < all.size(); ++i)
      ASSERT_EQ(f32ToBits(got[i]), f32ToBits(f16Want[i])) << "f16 " << std::hex << all[i];
    f32ToBf16(isa, f32In.data(), bfGot.data(), f32In.size());
    for (size_t i = 0; i < f32In.size(); ++i)
      ASSERT_EQ(bfGot[i], bfWant[i]) << std::hex << f32ToBits(f32In[i]);
  }
}
