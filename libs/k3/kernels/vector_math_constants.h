// The constants of the SIMD exp/expm1 (vector_math_avx2.h and
// vector_math_avx512.h): one set, so the two ISAs' results stay the same
// bits (tests/kernels/ops_simd_test.cpp).
// Thread-safety: constants.
#pragma once

namespace k3::kernels::vmath {

inline constexpr float kLog2e = 1.44269504088896341f;
// ln2 in two parts (Cody–Waite): the high part has few enough bits that
// j·kLn2Hi is exact for the |j| the clamps below allow.
inline constexpr float kLn2Hi = 0x1.62e4p-1f;
inline constexpr float kLn2Lo = 0x1.7f7d1cp-20f;  // ln2 − kLn2Hi
// expm1(f) = f + f²·(1/2 + f/6 + … + f⁵/5040) on |f| ≤ ~0.35: Taylor to
// degree 7, highest first for Horner.
inline constexpr float kExpm1Taylor[6] = {1.0f / 5040.0f, 1.0f / 720.0f, 1.0f / 120.0f,
                                          1.0f / 24.0f,   1.0f / 6.0f,   0.5f};
// Input clamps: exp rounds to 0 below −104 and to +inf above 89; expm1 is
// −1 below about −17.3 and overflows above ~88.72.
inline constexpr float kExpMin = -104.0f, kExpm1Min = -80.0f, kExpMax = 89.0f;

}  // namespace k3::kernels::vmath
