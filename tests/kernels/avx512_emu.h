// Test-only scalar model of the AVX-512 intrinsics the quant kernels use,
// written from the Intel Intrinsics Guide semantics. The kernel sources are
// compiled against it (see avx512_emu_test.cpp) so that their lane/index logic
// is tested on CPUs without AVX-512. Masked loads read only the selected
// lanes, like the hardware (ASan sees the same accesses).
//
// Lives in the kernels' (macro-renamed) namespace so unqualified calls in the
// kernel code resolve here and never to real intrinsics.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace k3::kernels::avx512_emu {

struct __m128i { union { int8_t i8[16]; uint8_t u8[16]; }; };
struct __m256i { union { int8_t i8[32]; uint8_t u8[32]; uint16_t u16[16]; }; };
struct __m512i {
  union { int8_t i8[64]; uint8_t u8[64]; int16_t i16[32]; uint16_t u16[32]; int32_t i32[16]; uint32_t u32[16]; };
};
struct __m512 { float f[16]; };
using __mmask16 = uint16_t;
using __mmask64 = uint64_t;

// ---- loads, sets, casts
inline __m128i _mm_loadu_si128(const __m128i* p) { __m128i r; std::memcpy(&r, p, 16); return r; }
inline __m512i _mm512_loadu_si512(const void* p) { __m512i r; std::memcpy(&r, p, 64); return r; }
inline __m512 _mm512_loadu_ps(const float* p) { __m512 r; std::memcpy(&r, p, 64); return r; }
inline __m512 _mm512_maskz_loadu_ps(__mmask16 k, const float* p) {
  __m512 r{};
  for (int i = 0; i < 16; ++i) if (k >> i & 1) r.f[i] = p[i];
  return r;
}
inline __m128i _mm_maskz_loadu_epi8(__mmask16 k, const void* p) {
  __m128i r{};
  for (int i = 0; i < 16; ++i) if (k >> i & 1) r.u8[i] = static_cast<const uint8_t*>(p)[i];
  return r;
}
inline __m256i _mm256_maskz_loadu_epi16(__mmask16 k, const void* p) {
  __m256i r{};
  for (int i = 0; i < 16; ++i)
    if (k >> i & 1) std::memcpy(&r.u16[i], static_cast<const uint8_t*>(p) + 2 * i, 2);
  return r;
}
inline __m512i _mm512_maskz_loadu_epi8(__mmask64 k, const void* p) {
  __m512i r{};
  for (int i = 0; i < 64; ++i) if (k >> i & 1) r.u8[i] = static_cast<const uint8_t*>(p)[i];
  return r;
}
inline __m512 _mm512_setzero_ps() { return __m512{}; }
inline __m512i _mm512_setzero_si512() { return __m512i{}; }
inline __m512 _mm512_set1_ps(float a) { __m512 r; for (float& f : r.f) f = a; return r; }
inline __m512i _mm512_set1_epi8(char a) { __m512i r; for (auto& v : r.i8) v = int8_t(a); return r; }
inline __m512 _mm512_setr_ps(float a0, float a1, float a2, float a3, float a4, float a5, float a6,
                             float a7, float a8, float a9, float a10, float a11, float a12,
                             float a13, float a14, float a15) {
  return __m512{{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15}};
}
inline __m512i _mm512_setr_epi32(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7,
                                 int a8, int a9, int a10, int a11, int a12, int a13, int a14, int a15) {
  const int v[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
  __m512i r;
  for (int i = 0; i < 16; ++i) r.i32[i] = v[i];
  return r;
}
inline __m128i _mm_setr_epi8(char a0, char a1, char a2, char a3, char a4, char a5, char a6, char a7,
                             char a8, char a9, char a10, char a11, char a12, char a13, char a14, char a15) {
  const char v[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
  __m128i r;
  for (int i = 0; i < 16; ++i) r.i8[i] = int8_t(v[i]);
  return r;
}
inline __m512 _mm512_castsi512_ps(__m512i a) { __m512 r; std::memcpy(&r, &a, 64); return r; }
inline __m512i _mm512_broadcast_i32x4(__m128i a) {
  __m512i r;
  for (int l = 0; l < 4; ++l) std::memcpy(&r.u8[16 * l], &a, 16);
  return r;
}

inline void _mm512_storeu_si512(void* p, __m512i a) { std::memcpy(p, &a, 64); }
inline void _mm512_storeu_ps(float* p, __m512 a) { std::memcpy(p, &a, 64); }

// ---- conversions
inline __m512i _mm512_cvtepu8_epi32(__m128i a) { __m512i r; for (int i = 0; i < 16; ++i) r.u32[i] = a.u8[i]; return r; }
inline __m512i _mm512_cvtepi8_epi32(__m128i a) { __m512i r; for (int i = 0; i < 16; ++i) r.i32[i] = a.i8[i]; return r; }
inline __m512i _mm512_cvtepu16_epi32(__m256i a) { __m512i r; for (int i = 0; i < 16; ++i) r.u32[i] = a.u16[i]; return r; }
inline __m512 _mm512_cvtepi32_ps(__m512i a) { __m512 r; for (int i = 0; i < 16; ++i) r.f[i] = float(a.i32[i]); return r; }

// ---- arithmetic and logic
inline __m512 _mm512_add_ps(__m512 a, __m512 b) { for (int i = 0; i < 16; ++i) a.f[i] += b.f[i]; return a; }
inline __m512 _mm512_mul_ps(__m512 a, __m512 b) { for (int i = 0; i < 16; ++i) a.f[i] *= b.f[i]; return a; }
inline __m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c) {
  for (int i = 0; i < 16; ++i) a.f[i] = std::fma(a.f[i], b.f[i], c.f[i]);
  return a;
}
// Lanes in k: a * b + c (fused); the others keep c.
inline __m512 _mm512_mask3_fmadd_ps(__m512 a, __m512 b, __m512 c, __mmask16 k) {
  for (int i = 0; i < 16; ++i)
    if (k >> i & 1) c.f[i] = std::fma(a.f[i], b.f[i], c.f[i]);
  return c;
}
// Lanes in k: a * b; the others zero.
inline __m512 _mm512_maskz_mul_ps(__mmask16 k, __m512 a, __m512 b) {
  __m512 r;
  for (int i = 0; i < 16; ++i) r.f[i] = (k >> i & 1) ? a.f[i] * b.f[i] : 0.0f;
  return r;
}
inline float _mm512_reduce_add_ps(__m512 a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a.f[i] += a.f[i + w];
  return a.f[0];
}
inline __m512i _mm512_add_epi32(__m512i a, __m512i b) {
  for (int i = 0; i < 16; ++i) a.u32[i] += b.u32[i];
  return a;
}
inline __m512i _mm512_and_si512(__m512i a, __m512i b) { for (int i = 0; i < 64; ++i) a.u8[i] &= b.u8[i]; return a; }
inline __m512i _mm512_sub_epi32(__m512i a, __m512i b) {
  for (int i = 0; i < 16; ++i) a.u32[i] -= b.u32[i];
  return a;
}
inline __m512i _mm512_xor_si512(__m512i a, __m512i b) { for (int i = 0; i < 64; ++i) a.u8[i] ^= b.u8[i]; return a; }
inline __m512i _mm512_srli_epi16(__m512i a, unsigned n) { for (auto& v : a.u16) v = uint16_t(n > 15 ? 0 : v >> n); return a; }
inline __m512i _mm512_srli_epi32(__m512i a, unsigned n) { for (auto& v : a.u32) v = n > 31 ? 0 : v >> n; return a; }
// Per-lane logical right shift; counts above 31 give 0.
inline __m512i _mm512_srlv_epi32(__m512i a, __m512i n) {
  for (int i = 0; i < 16; ++i) a.u32[i] = n.u32[i] > 31 ? 0 : a.u32[i] >> n.u32[i];
  return a;
}
inline __m512i _mm512_slli_epi32(__m512i a, unsigned n) { for (auto& v : a.u32) v = n > 31 ? 0 : v << n; return a; }
// Sum of 4 products of unsigned bytes of a and signed bytes of b, added to src.
inline __m512i _mm512_dpbusd_epi32(__m512i src, __m512i a, __m512i b) {
  for (int i = 0; i < 16; ++i) {
    int32_t s = 0;
    for (int k = 0; k < 4; ++k) s += int32_t(a.u8[4 * i + k]) * int32_t(b.i8[4 * i + k]);
    src.u32[i] += uint32_t(s);
  }
  return src;
}

// ---- permutes
// Bytes of a selected within each 128-bit lane by the low 4 bits of b; bit 7 zeroes.
inline __m512i _mm512_shuffle_epi8(__m512i a, __m512i b) {
  __m512i r;
  for (int i = 0; i < 64; ++i) {
    int lane = i / 16;
    r.u8[i] = (b.u8[i] & 0x80) ? 0 : a.u8[16 * lane + (b.u8[i] & 15)];
  }
  return r;
}
// Bytes of a selected across all 64 by the low 6 bits of idx (vpermb).
inline __m512i _mm512_permutexvar_epi8(__m512i idx, __m512i a) {
  __m512i r;
  for (int i = 0; i < 64; ++i) r.u8[i] = a.u8[idx.u8[i] & 63];
  return r;
}
inline __m512 _mm512_permutexvar_ps(__m512i idx, __m512 a) {
  __m512 r;
  for (int i = 0; i < 16; ++i) r.f[i] = a.f[idx.u32[i] & 15];
  return r;
}
// Within each 128-bit lane: dwords (qwords) of the low (high) halves of a and b interleaved.
inline __m512i _mm512_unpacklo_epi32(__m512i a, __m512i b) {
  __m512i r;
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 2; ++i) r.u32[4 * l + 2 * i] = a.u32[4 * l + i], r.u32[4 * l + 2 * i + 1] = b.u32[4 * l + i];
  return r;
}
inline __m512i _mm512_unpackhi_epi32(__m512i a, __m512i b) {
  __m512i r;
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 2; ++i) r.u32[4 * l + 2 * i] = a.u32[4 * l + 2 + i], r.u32[4 * l + 2 * i + 1] = b.u32[4 * l + 2 + i];
  return r;
}
inline __m512i _mm512_unpacklo_epi64(__m512i a, __m512i b) {
  __m512i r;
  for (int l = 0; l < 4; ++l) {
    std::memcpy(&r.u32[4 * l], &a.u32[4 * l], 8);
    std::memcpy(&r.u32[4 * l + 2], &b.u32[4 * l], 8);
  }
  return r;
}
inline __m512i _mm512_unpackhi_epi64(__m512i a, __m512i b) {
  __m512i r;
  for (int l = 0; l < 4; ++l) {
    std::memcpy(&r.u32[4 * l], &a.u32[4 * l + 2], 8);
    std::memcpy(&r.u32[4 * l + 2], &b.u32[4 * l + 2], 8);
  }
  return r;
}
inline __m128i _mm_shuffle_epi8(__m128i a, __m128i b) {
  __m128i r;
  for (int i = 0; i < 16; ++i) r.u8[i] = (b.u8[i] & 0x80) ? 0 : a.u8[b.u8[i] & 15];
  return r;
}
// 128-bit lanes: result lanes 0-1 from a, 2-3 from b, each picked by 2 bits of imm.
// ---- the activation quantiser's float ops (act_quantize_avx512.cpp)
#ifndef _MM_FROUND_TO_NEAREST_INT
#define _MM_FROUND_TO_NEAREST_INT 0x00
#define _MM_FROUND_NO_EXC 0x08
#endif
inline __m512i _mm512_set1_epi32(int v) { __m512i r; for (int i = 0; i < 16; ++i) r.i32[i] = v; return r; }
// Each 64-bit element = a (little-endian: dword lane 2i its low half, 2i + 1 its high half).
inline __m512i _mm512_set1_epi64(long long a) {
  __m512i r;
  for (int i = 0; i < 8; ++i) std::memcpy(&r.u8[8 * i], &a, 8);
  return r;
}
inline __m512 _mm512_and_ps(__m512 a, __m512 b) {
  for (int i = 0; i < 16; ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a.f[i], 4);
    std::memcpy(&y, &b.f[i], 4);
    x &= y;
    std::memcpy(&a.f[i], &x, 4);
  }
  return a;
}
// maxps/minps: the second operand when either is NaN (or both are zeros).
inline __m512 _mm512_max_ps(__m512 a, __m512 b) { for (int i = 0; i < 16; ++i) a.f[i] = a.f[i] > b.f[i] ? a.f[i] : b.f[i]; return a; }
inline __m512 _mm512_min_ps(__m512 a, __m512 b) { for (int i = 0; i < 16; ++i) a.f[i] = a.f[i] < b.f[i] ? a.f[i] : b.f[i]; return a; }
inline __m512 _mm512_div_ps(__m512 a, __m512 b) { for (int i = 0; i < 16; ++i) a.f[i] /= b.f[i]; return a; }
inline __m512 _mm512_roundscale_ps(__m512 a, int) { for (int i = 0; i < 16; ++i) a.f[i] = std::nearbyint(a.f[i]); return a; }
inline __m512i _mm512_cvtps_epi32(__m512 a) {
  __m512i r;
  for (int i = 0; i < 16; ++i) r.i32[i] = static_cast<int32_t>(std::nearbyint(a.f[i]));
  return r;
}
inline __m128i _mm512_cvtsepi32_epi8(__m512i a) {
  __m128i r;
  for (int i = 0; i < 16; ++i) r.i8[i] = static_cast<int8_t>(a.i32[i] > 127 ? 127 : a.i32[i] < -128 ? -128 : a.i32[i]);
  return r;
}
inline void _mm_storeu_si128(__m128i* p, __m128i a) { std::memcpy(p, &a, 16); }
inline __m512 _mm512_shuffle_f32x4(__m512 a, __m512 b, int imm) {
  __m512 r;
  for (int l = 0; l < 4; ++l) {
    const __m512& src = l < 2 ? a : b;
    const int sel = (imm >> (2 * l)) & 3;
    for (int i = 0; i < 4; ++i) r.f[4 * l + i] = src.f[4 * sel + i];
  }
  return r;
}
// Within each 128-bit lane: elements 0-1 from a, 2-3 from b, picked by imm.
inline __m512 _mm512_shuffle_ps(__m512 a, __m512 b, int imm) {
  __m512 r;
  for (int l = 0; l < 4; ++l)
    for (int i = 0; i < 4; ++i) r.f[4 * l + i] = (i < 2 ? a : b).f[4 * l + ((imm >> (2 * i)) & 3)];
  return r;
}
inline __m512i _mm512_castps_si512(__m512 a) { __m512i r; std::memcpy(&r, &a, 64); return r; }
inline __m512 _mm512_unpacklo_ps(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_unpacklo_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline __m512 _mm512_unpackhi_ps(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_unpackhi_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
inline float _mm512_cvtss_f32(__m512 a) { return a.f[0]; }
inline __m512i _mm512_permutex2var_epi32(__m512i a, __m512i idx, __m512i b) {
  __m512i r;
  for (int i = 0; i < 16; ++i) {
    uint32_t j = idx.u32[i];
    r.u32[i] = (j & 16) ? b.u32[j & 15] : a.u32[j & 15];
  }
  return r;
}

}  // namespace k3::kernels::avx512_emu
