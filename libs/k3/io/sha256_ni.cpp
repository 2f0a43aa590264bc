#include "k3/io/sha256_ni.h"

#include <cpuid.h>
#include <immintrin.h>

#include <cstring>

namespace k3 {
namespace {

alignas(16) constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define K3_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

// The SHA-NI round unit wants the state as (A,B,E,F) and (C,D,G,H).
struct NiState {
  __m128i abef, cdgh;
};

K3_SHA_TARGET inline NiState loadState(const uint32_t st[8]) {
  __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(st));      // a b c d (low..high)
  __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(st + 4));  // e f g h
  abcd = _mm_shuffle_epi32(abcd, 0xB1);  // b a d c
  efgh = _mm_shuffle_epi32(efgh, 0x1B);  // h g f e
  return {_mm_alignr_epi8(abcd, efgh, 8), _mm_blend_epi16(efgh, abcd, 0xF0)};  // f e b a | h g d c
}

K3_SHA_TARGET inline void storeState(const NiState& s, uint32_t st[8]) {
  const __m128i feba = _mm_shuffle_epi32(s.abef, 0x1B);  // a b e f
  const __m128i dchg = _mm_shuffle_epi32(s.cdgh, 0xB1);  // g h c d
  _mm_storeu_si128(reinterpret_cast<__m128i*>(st), _mm_blend_epi16(feba, dchg, 0xF0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(st + 4), _mm_alignr_epi8(dchg, feba, 8));
}

// Compresses one 64-byte block into `s` (used for both the single and the
// paired loop: the paired loop calls it twice per iteration on independent
// data, and the compiler interleaves the two dependency chains).
K3_SHA_TARGET inline void block(NiState& s, const uint8_t* p) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i w[4];
  for (int i = 0; i < 4; ++i)
    w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), bswap);
  const NiState saved = s;
  for (int j = 0; j < 16; ++j) {
    if (j >= 4) {
      const __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(w[j & 3], w[(j + 1) & 3]),
                                      _mm_alignr_epi8(w[(j + 3) & 3], w[(j + 2) & 3], 4));
      w[j & 3] = _mm_sha256msg2_epu32(t, w[(j + 3) & 3]);
    }
    __m128i msg = _mm_add_epi32(w[j & 3], _mm_load_si128(reinterpret_cast<const __m128i*>(kK + 4 * j)));
    s.cdgh = _mm_sha256rnds2_epu32(s.cdgh, s.abef, msg);
    msg = _mm_shuffle_epi32(msg, 0x0E);
    s.abef = _mm_sha256rnds2_epu32(s.abef, s.cdgh, msg);
  }
  s.abef = _mm_add_epi32(s.abef, saved.abef);
  s.cdgh = _mm_add_epi32(s.cdgh, saved.cdgh);
}

K3_SHA_TARGET void blocks1(uint32_t st[8], const uint8_t* p, size_t n) {
  NiState s = loadState(st);
  for (size_t i = 0; i < n; ++i) block(s, p + 64 * i);
  storeState(s, st);
}

K3_SHA_TARGET void blocks2(uint32_t sa[8], const uint8_t* pa, uint32_t sb[8], const uint8_t* pb, size_t n) {
  NiState a = loadState(sa), b = loadState(sb);
  for (size_t i = 0; i < n; ++i) {
    block(a, pa + 64 * i);
    block(b, pb + 64 * i);
  }
  storeState(a, sa);
  storeState(b, sb);
}

}  // namespace

// CPUID directly: clang 14's __builtin_cpu_supports does not know "sha".
bool sha256NiAvailable() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1)) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    return (b & bit_SHA) != 0;
  }();
  return ok;
}

Sha256Ni::Sha256Ni()
    : state_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

size_t Sha256Ni::fill(const uint8_t*& p, size_t& len) {
  if (partialLen_ == 0) return 0;
  const size_t take = std::min(len, 64 - partialLen_);
  std::memcpy(partial_ + partialLen_, p, take);
  partialLen_ += take;
  p += take;
  len -= take;
  if (partialLen_ == 64) {
    blocks1(state_, partial_, 1);
    partialLen_ = 0;
  }
  return take;
}

void Sha256Ni::update(const uint8_t* data, size_t len) {
  total_ += len;
  fill(data, len);
  if (len == 0) return;
  const size_t n = len / 64;
  if (n) blocks1(state_, data, n);
  partialLen_ = len - 64 * n;
  std::memcpy(partial_, data + 64 * n, partialLen_);
}

void Sha256Ni::updatePair(Sha256Ni& a, const uint8_t* pa, Sha256Ni& b, const uint8_t* pb, size_t len) {
  a.total_ += len;
  b.total_ += len;
  size_t la = len, lb = len;
  a.fill(pa, la);
  b.fill(pb, lb);
  // Both partial blocks are now empty (or all input was absorbed).
  const size_t na = a.partialLen_ ? 0 : la / 64, nb = b.partialLen_ ? 0 : lb / 64;
  const size_t both = std::min(na, nb);
  if (both) blocks2(a.state_, pa, b.state_, pb, both);
  if (na > both) blocks1(a.state_, pa + 64 * both, na - both);
  if (nb > both) blocks1(b.state_, pb + 64 * both, nb - both);
  if (!a.partialLen_ && la) {
    a.partialLen_ = la - 64 * na;
    std::memcpy(a.partial_, pa + 64 * na, a.partialLen_);
  }
  if (!b.partialLen_ && lb) {
    b.partialLen_ = lb - 64 * nb;
    std::memcpy(b.partial_, pb + 64 * nb, b.partialLen_);
  }
}

Sha256Digest Sha256Ni::finish() {
  uint8_t pad[128] = {};
  std::memcpy(pad, partial_, partialLen_);
  pad[partialLen_] = 0x80;
  const size_t blocksNeeded = partialLen_ + 9 <= 64 ? 1 : 2;
  const uint64_t bits = total_ * 8;
  for (int i = 0; i < 8; ++i) pad[64 * blocksNeeded - 1 - i] = static_cast<uint8_t>(bits >> (8 * i));
  blocks1(state_, pad, blocksNeeded);
  Sha256Digest d;
  for (int i = 0; i < 8; ++i)
    for (int b = 0; b < 4; ++b) d[4 * i + b] = static_cast<uint8_t>(state_[i] >> (24 - 8 * b));
  return d;
}

}  // namespace k3
