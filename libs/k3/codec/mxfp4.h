// MXFP4 (OCP microscaling, e2m1 codes + ue8m0 group exponent), spec section 4.
// Thread-safe: pure functions, no shared mutable state.
#pragma once

#include <cstdint>

#include "k3/codec/bf16.h"

namespace k3::codec {

// e2m1 code -> value, code order 0..15 (bit 3 = sign).
inline constexpr float kE2M1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// Doubled values: exact int8, used by the integer-dot (IDOT) kernels.
inline constexpr int8_t kE2M1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline constexpr int kMxfp4Group = 32;  // columns per ue8m0 scale

// ue8m0 scale byte -> f32 by placing `s` in the f32 exponent field (bit pattern
// s << 23), the peer engine's convention, which k3kit adopts everywhere:
//   1 <= s <= 254: exactly 2^(s-127)
//   s == 0:        +0.0   (not the subnormal 2^-127; the whole group is zero)
//   s == 255:      +inf   (a group with any nonzero code becomes +-inf; a zero
//                          code gives NaN, 0 * inf)
// Real K3 checkpoints contain neither 0 nor 255 (the converter reports them).
constexpr float ue8m0ToF32(uint8_t s) { return bitsToF32(uint32_t(s) << 23); }

}  // namespace k3::codec
