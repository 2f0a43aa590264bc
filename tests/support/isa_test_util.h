// Helpers shared by the codec and kernels tests: the ISAs this CPU runs, deterministic
// random data (float <-> bits: k3::codec::f32ToBits / bitsToF32 in codec/bf16.h).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "k3/kernels/cpu_features.h"

namespace k3test {

inline std::vector<k3::kernels::Isa> supportedIsas() {
  std::vector<k3::kernels::Isa> out;
  for (auto isa : {k3::kernels::Isa::Scalar, k3::kernels::Isa::Avx2, k3::kernels::Isa::Avx512})
    if (k3::kernels::isaSupported(isa)) out.push_back(isa);
  return out;
}

inline std::vector<float> uniformFloats(size_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

inline std::vector<uint8_t> randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

}  // namespace k3test
