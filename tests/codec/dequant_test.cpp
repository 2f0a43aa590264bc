// Format decoding against hand-computed tables: e2m1 codes, ue8m0 scales
// (including the s = 0 / s = 255 convention), int4 nibbles, int8 rows.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/weight_view.h"
#include "k3/io/error.h"
#include "support/isa_test_util.h"

using namespace k3::codec;

TEST(Mxfp4, Ue8m0Scale) {
  EXPECT_EQ(ue8m0ToF32(127), 1.0f);
  EXPECT_EQ(ue8m0ToF32(128), 2.0f);
  EXPECT_EQ(ue8m0ToF32(120), 1.0f / 128.0f);
  EXPECT_EQ(ue8m0ToF32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(ue8m0ToF32(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(f32ToBits(ue8m0ToF32(0)), 0u);  // documented: +0, not 2^-127
  EXPECT_EQ(ue8m0ToF32(255), INFINITY);                 // documented: +inf
}

TEST(Mxfp4, DequantizeRowHandTable) {
  // One row, 64 columns: group 0 has every code in order twice (byte k holds
  // codes 2k and 2k+1, low nibble first), scale 2^1; group 1 codes 15..0, scale 2^-2.
  std::vector<uint8_t> packed(32);
  for (int k = 0; k < 16; ++k) {
    int c0 = (2 * k) % 16, c1 = (2 * k + 1) % 16;
    packed[k] = uint8_t(c0 | (c1 << 4));
    int d0 = 15 - c0, d1 = 15 - c1;
    packed[16 + k] = uint8_t(d0 | (d1 << 4));
  }
  uint8_t scales[2] = {128, 125};
  const float byCode[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  WeightView w{WeightFormat::MXFP4, 1, 64, packed.data(), scales};
  std::vector<float> out(64);
  dequantizeRow(w, 0, out.data());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], byCode[i % 16] * 2.0f) << i;
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[32 + i], byCode[15 - i % 16] * 0.25f) << i;
  EXPECT_TRUE(std::signbit(out[8]));  // code 8 is -0
  // Spot values written out by hand.
  EXPECT_EQ(out[7], 12.0f);
  EXPECT_EQ(out[15], -12.0f);
  EXPECT_EQ(out[32], -1.5f);  // code 15 * 0.25
  EXPECT_EQ(out[39], 0.0f);   // code 8 (-0) * 0.25
}

TEST(Mxfp4, ZeroExponentGivesZeros) {
  std::vector<uint8_t> packed(16, 0x77);  // code 7 (6.0) everywhere
  uint8_t s0 = 0, s255 = 255;
  std::vector<float> out(32);
  dequantizeRow(WeightView{WeightFormat::MXFP4, 1, 32, packed.data(), &s0}, 0, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
  dequantizeRow(WeightView{WeightFormat::MXFP4, 1, 32, packed.data(), &s255}, 0, out.data());
  for (float v : out) EXPECT_EQ(v, INFINITY);
}

TEST(Int4, DequantizeRowHandTable) {
  // 2 rows x 64 columns; row 1 byte k = k (low nibble k&15 for even col).
  std::vector<uint8_t> packed(64, 0x88);  // row 0: all nibbles 8 -> 0
  for (int k = 0; k < 32; ++k) packed[32 + k] = uint8_t(k * 16 + (15 - k % 16));
  float scales[2] = {1.0f, 0.5f};
  WeightView w{WeightFormat::I4G64, 2, 64, packed.data(), scales};
  std::vector<float> out(64);
  dequantizeRow(w, 0, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
  dequantizeRow(w, 1, out.data());
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(out[2 * k], float((15 - k % 16) - 8) * 0.5f) << k;
    EXPECT_EQ(out[2 * k + 1], float(((k * 16) >> 4 & 15) - 8) * 0.5f) << k;
  }
  EXPECT_EQ(out[0], 3.5f);   // nibble 15
  EXPECT_EQ(out[1], -4.0f);  // nibble 0
}

TEST(Int8, DequantizeRowAndBf16) {
  int8_t q[6] = {-127, -1, 0, 1, 64, 127};
  float s[2] = {0.5f, 2.0f};
  std::vector<float> out(3);
  dequantizeRow(WeightView{WeightFormat::I8Row, 2, 3, q, s}, 1, out.data());
  EXPECT_EQ(out, (std::vector<float>{2.0f, 128.0f, 254.0f}));
  uint16_t b[2] = {0x3f80, 0xc040};
  std::vector<float> o2(2);
  dequantizeRow(WeightView{WeightFormat::BF16, 1, 2, b, nullptr}, 0, o2.data());
  EXPECT_EQ(o2, (std::vector<float>{1.0f, -3.0f}));
}

TEST(WeightView, RejectsMalformedViews) {
  std::vector<uint8_t> d(64);
  uint8_t s[4] = {};
  std::vector<float> out(64);
  EXPECT_THROW(dequantizeRow(WeightView{WeightFormat::MXFP4, 1, 48, d.data(), s}, 0, out.data()),
               k3::Error);  // 48 % 32 != 0
  EXPECT_THROW(dequantizeRow(WeightView{WeightFormat::I4G64, 1, 32, d.data(), s}, 0, out.data()),
               k3::Error);  // 32 % 64 != 0
  EXPECT_THROW(dequantizeRow(WeightView{WeightFormat::I8Row, 1, 8, d.data(), nullptr}, 0, out.data()),
               k3::Error);  // no scales
  EXPECT_THROW(dequantizeRow(WeightView{WeightFormat::F32, 2, 8, d.data(), nullptr}, 2, out.data()),
               k3::Error);  // row out of range
}
