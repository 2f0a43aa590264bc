// k3-verify's SHA-NI SHA-256 (single and paired streams) against OpenSSL's
// SHA-256 (k3::Sha256) on random data split into random update sizes, and
// the FIPS 180-4 "abc" vector.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "k3/io/sha256.h"
#include "k3/io/sha256_ni.h"

namespace {

using k3::Sha256Ni;

TEST(Sha256Ni, FipsAbc) {
  if (!k3::sha256NiAvailable()) GTEST_SKIP() << "no SHA-NI";
  Sha256Ni h;
  h.update(reinterpret_cast<const uint8_t*>("abc"), 3);
  EXPECT_EQ(h.finishHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Ni, SingleAndPairedMatchOpenSsl) {
  if (!k3::sha256NiAvailable()) GTEST_SKIP() << "no SHA-NI";
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t len = rng() % 5000;
    std::vector<uint8_t> x(len + 1), y(len + 1);
    for (auto& b : x) b = static_cast<uint8_t>(rng());
    for (auto& b : y) b = static_cast<uint8_t>(rng());
    // A: single updates of random sizes; B and C: paired updates with a
    // different (random) prefix fed to B alone, so the two streams are misaligned.
    const size_t skew = rng() % 130;
    Sha256Ni a, b, c;
    k3::Sha256 refC;
    std::vector<uint8_t> bIn(y.begin(), y.begin() + static_cast<long>(std::min(skew, len)));
    b.update(bIn.data(), bIn.size());
    size_t at = 0;
    while (at < len) {
      const size_t n = std::min(len - at, 1 + static_cast<size_t>(rng() % 300));
      a.update(x.data() + at, n);
      Sha256Ni::updatePair(c, x.data() + at, b, y.data() + at, n);
      refC.update(x.data() + at, n);
      at += n;
    }
    std::vector<uint8_t> bAll(bIn);
    bAll.insert(bAll.end(), y.begin(), y.begin() + static_cast<long>(len));
    EXPECT_EQ(a.finishHex(), k3::Sha256::hexOf(x.data(), len)) << "len " << len;
    EXPECT_EQ(c.finishHex(), refC.finishHex()) << "len " << len;
    EXPECT_EQ(b.finishHex(), k3::Sha256::hexOf(bAll.data(), bAll.size())) << "len " << len << " skew " << skew;
  }
}

}  // namespace
