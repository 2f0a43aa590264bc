// AVX2/FMA matmul kernels for every weight format (matvec is n = 1).
//
// Every (row, vector) result has one accumulator (8 lanes) that takes its
// updates in column order, then a fixed-order horizontal sum (plus, for a
// column count that is not a multiple of 8, a scalar tail). That sequence does
// not depend on how rows and vectors are tiled, so matvec (tiles of 8 rows x 1
// vector: eight independent chains) and matmul (tiles of 1 row x up to 8
// vectors: one weight decode feeds 8 of them) give identical bits.
//
// Dense formats are decoded to f32 in registers and FMA'd into the
// accumulator; int8 rows multiply the finished sum by the row scale (spec
// 5.3). The 4-bit formats decode to their integer values (doubled e2m1, or
// nibble - 8), sum each 32-column group's products in a fresh chain, and add
// that times the group's factor (2^(s-127)*0.5, or the int4 scale) to the
// accumulator with one FMA: 5 FP operations per 32 columns instead of 8, and
// the accumulator's dependency chain advances once per group, not 4 times
// (that chain bounded the kernel). For MXFP4 the factor is a power of two, so
// scaling after the group sum is exact.
// Thread-safe: no shared mutable state.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/kernels/matvec_kernels.h"
#include "k3/kernels/row_sums_avx2.h"

namespace k3::kernels::avx2 {

namespace {

// ---- decoders: 32 columns (4 x 8 f32) of a row; dense formats also 8 and 1.

struct F32Decoder {
  static constexpr bool kDense = true;
  static constexpr size_t kBytesPer32 = 128;
  const float* d;
  size_t cols;
  const void* at(size_t r, size_t i) const { return d + r * cols + i; }
  void dec32(size_t r, size_t i, __m256* w) const {
    for (int k = 0; k < 4; ++k) w[k] = dec8(r, i + 8 * k);
  }
  __m256 dec8(size_t r, size_t i) const { return _mm256_loadu_ps(d + r * cols + i); }
  float dec1(size_t r, size_t i) const { return d[r * cols + i]; }
  float finish(size_t, float v) const { return v; }
};

struct Bf16Decoder {
  static constexpr bool kDense = true;
  static constexpr size_t kBytesPer32 = 64;
  const uint16_t* d;
  size_t cols;
  const void* at(size_t r, size_t i) const { return d + r * cols + i; }
  void dec32(size_t r, size_t i, __m256* w) const {
    for (int k = 0; k < 4; ++k) w[k] = dec8(r, i + 8 * k);
  }
  __m256 dec8(size_t r, size_t i) const {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + r * cols + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  float dec1(size_t r, size_t i) const { return k3::codec::bf16ToF32(d[r * cols + i]); }
  float finish(size_t, float v) const { return v; }
};

struct I8Decoder {
  static constexpr bool kDense = true;
  static constexpr size_t kBytesPer32 = 32;
  const int8_t* d;
  const float* scales;
  size_t cols;
  const void* at(size_t r, size_t i) const { return d + r * cols + i; }
  void dec32(size_t r, size_t i, __m256* w) const {
    for (int k = 0; k < 4; ++k) w[k] = dec8(r, i + 8 * k);
  }
  __m256 dec8(size_t r, size_t i) const {
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(d + r * cols + i));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
  }
  float dec1(size_t r, size_t i) const { return float(d[r * cols + i]); }
  float finish(size_t r, float v) const { return scales[r] * v; }
};

// 4-bit formats: 16 packed bytes -> 32 integer-valued f32 in column order.
// Every value (doubled e2m1, or nibble - 8) is exact in bf16, i.e. an f32
// whose two low bytes are 0, so two 16-entry tables (each value's bf16 low
// and high byte) and byte shuffles build the f32s directly: no converts.
// The 16 bytes go to both 128-bit lanes, one shuffle lays each lane's bytes
// out so that the unpacks below land columns 8k..8k+3 in lane 0 and
// 8k+4..8k+7 in lane 1 of w[k], and a 16-bit shift and masks pick each
// byte's low or high nibble. The earlier decode (half-float high bytes,
// vcvtph2ps) ran the decode alone at 0.68 of this rate on Zen 4. Same values,
// exactly.
template <class BlockScale>
struct NibbleDecoder {
  static constexpr bool kDense = false;
  static constexpr size_t kBytesPer32 = 16;
  const uint8_t* d;
  size_t cols;
  const void* at(size_t r, size_t i) const { return d + (r * cols + i) / 2; }
  __m256i bf16Lo, bf16Hi;  // nibble -> low / high byte of its value as bf16 (both lanes)
  BlockScale blockScale;   // (row, 32-column block) -> f32 multiplier
  void dec32(size_t r, size_t i, __m256* w) const {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + (r * cols + i) / 2)));
    // Each 16-bit word: one byte twice; lane 0 takes bytes 0,1,4,5,8,9,12,13
    // (columns 0-3, 8-11, 16-19, 24-27), lane 1 the others.
    const __m256i twice = _mm256_shuffle_epi8(
        b, _mm256_setr_epi8(0, 0, 1, 1, 4, 4, 5, 5, 8, 8, 9, 9, 12, 12, 13, 13,  //
                            2, 2, 3, 3, 6, 6, 7, 7, 10, 10, 11, 11, 14, 14, 15, 15));
    // Low byte of each word: the low nibble (even column); high byte: the high.
    const __m256i code = _mm256_or_si256(_mm256_and_si256(twice, _mm256_set1_epi16(0x000F)),
                                         _mm256_and_si256(_mm256_srli_epi16(twice, 4), _mm256_set1_epi16(0x0F00)));
    const __m256i lo = _mm256_shuffle_epi8(bf16Lo, code), hi = _mm256_shuffle_epi8(bf16Hi, code);
    const __m256i a = _mm256_unpacklo_epi8(lo, hi), c = _mm256_unpackhi_epi8(lo, hi);  // bf16 words
    const __m256i z = _mm256_setzero_si256();
    w[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, a));
    w[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, a));
    w[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, c));
    w[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, c));
  }
  __m256 factor(size_t r, size_t i) const { return _mm256_set1_ps(blockScale(r, i / 32)); }
  __m256 dec8(size_t, size_t) const { return _mm256_setzero_ps(); }  // unused: cols % 32 == 0
  float dec1(size_t, size_t) const { return 0.0f; }                  // unused
  float finish(size_t, float v) const { return v; }
};

// An MXFP4 block's factor, ue8m0ToF32(s) * 0.5, by scale byte: one broadcast
// load per block instead of a shift, a move into a vector register, a
// multiply and a register broadcast (quant_bench Matvec MXFP4/avx2,
// alternating, hot median 5.8 -> 6.4 GB/s, 2 threads 9.3 -> 10.3).
constexpr std::array<float, 256> kHalfUe8m0 = [] {
  std::array<float, 256> t{};
  for (size_t s = 0; s < 256; ++s) t[s] = ue8m0ToF32(uint8_t(s)) * 0.5f;
  return t;
}();

// ---- tiles of NR rows x NV vectors

// One vector through a 4-bit matrix goes one row at a time: the group sums
// already break the accumulator's dependency chain (one FMA per 32 columns),
// and one row stream with a software prefetch 16 rows ahead suits the
// hardware prefetcher better than 8 interleaved ones (quant_bench
// ExpertDecodeK3 MXFP4/avx2, K3's expert shapes from DRAM, 2 threads, three
// alternating rounds: 8 rows 11.5-11.8 -> 1 row 12.3-12.7 GB/s; L2-resident
// unchanged). Each row's chain is the same, so are the bits.
constexpr size_t kNibblePrefetchRows = 16;

template <class Decoder>
struct Tiles {
  static constexpr bool kDense = Decoder::kDense;
  Decoder dec;
  const float* X;
  size_t cols;

  template <int NR, int NV>
  void tile(size_t r, size_t v0, float* out) const {  // out[rr * NV + j]
    __m256 acc[NR][NV];
    const float* x[NV];
    for (int j = 0; j < NV; ++j) x[j] = X + (v0 + j) * cols;
    for (int rr = 0; rr < NR; ++rr)
      for (int j = 0; j < NV; ++j) acc[rr][j] = _mm256_setzero_ps();
    size_t i = 0;
    // Rows unrolled, so each row's accumulator stays in a register instead of
    // a stack slot that every block loads and stores (quant_bench Matvec
    // MXFP4/avx2 hot 5.0-5.75 -> 5.9-6.0 GB/s; same operations).
    for (; i + 32 <= cols; i += 32)
#pragma GCC unroll 8
      for (int rr = 0; rr < NR; ++rr) {
        // One vector streams its rows once from DRAM: each row prefetches the
        // same columns of the row NR on (the next tile's), non-temporally.
        // int8 and 4-bit rows only: from DRAM (quant_bench Matvec, 2 threads)
        // it took int8 rows 34.2, 31.4 -> 36.7, 37.2 GB/s, while BF16 rows did
        // better on the hardware prefetcher alone (38.5, 35.0 -> 33.2, 32.6).
        if constexpr (NV == 1 && Decoder::kBytesPer32 <= 32) {
          constexpr size_t ahead = Decoder::kDense ? NR : kNibblePrefetchRows;
          for (size_t o = 0; o < Decoder::kBytesPer32; o += 64)
            _mm_prefetch(static_cast<const char*>(dec.at(r + rr + ahead, i)) + o, _MM_HINT_NTA);
        }
        __m256 w[4];
        dec.dec32(r + rr, i, w);
        if constexpr (Decoder::kDense) {
          for (int k = 0; k < 4; ++k)
            for (int j = 0; j < NV; ++j)
              acc[rr][j] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x[j] + i + 8 * k), acc[rr][j]);
        } else {
          const __m256 f = dec.factor(r + rr, i);
          for (int j = 0; j < NV; ++j) {
            __m256 t = _mm256_mul_ps(w[0], _mm256_loadu_ps(x[j] + i));
            for (int k = 1; k < 4; ++k) t = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x[j] + i + 8 * k), t);
            acc[rr][j] = _mm256_fmadd_ps(t, f, acc[rr][j]);
          }
        }
      }
    if constexpr (Decoder::kDense)
      for (; i + 8 <= cols; i += 8)
        for (int rr = 0; rr < NR; ++rr) {
          __m256 w = dec.dec8(r + rr, i);
          for (int j = 0; j < NV; ++j)
            acc[rr][j] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x[j] + i), acc[rr][j]);
        }
    for (int rr = 0; rr < NR; ++rr)
      for (int j = 0; j < NV; ++j) {
        float tail = 0.0f;
        if constexpr (Decoder::kDense)
          for (size_t t = i; t < cols; ++t) tail += x[j][t] * dec.dec1(r + rr, t);
        out[rr * NV + j] = dec.finish(r + rr, rowSum(acc[rr][j]) + tail);
      }
  }
};

template <int NR, int NV, class T>
inline void runTile(const T& t, size_t r, size_t v0, size_t rows, float* Y) {
  float out[NR * NV];
  t.template tile<NR, NV>(r, v0, out);
  for (int rr = 0; rr < NR; ++rr)
    for (int j = 0; j < NV; ++j) Y[(v0 + j) * rows + r + rr] = out[rr * NV + j];
}

// Rows in L2-sized blocks; inside a block, vectors 8/4/2 at a time share each
// row decode, and leftover single vectors of the dense formats go 8 rows at a
// time (matvec; 4-bit rows one at a time, kNibblePrefetchRows): a
// row's accumulator is one FMA chain, and 4 chains held the one-vector int8
// kernel at one FMA latency per 8 weights (quant_bench Matvec I8Row/avx2,
// DRAM, 2 threads: 4 rows 25.9, 25.2 -> 8 rows 28.8, 32.1 GB/s; BF16 27.4,
// 26.6 -> 34.9, 37.5). Each row's chain is the same, so are the bits.
template <class T>
void runTiles(const T& t, size_t n, size_t r0, size_t r1, size_t rows, float* Y) {
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    const size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    size_t v = 0;
    for (; v + 8 <= n; v += 8)
      for (size_t r = rb; r < re; ++r) runTile<1, 8>(t, r, v, rows, Y);
    for (; v + 4 <= n; v += 4)
      for (size_t r = rb; r < re; ++r) runTile<1, 4>(t, r, v, rows, Y);
    for (; v + 2 <= n; v += 2) {
      size_t r = rb;
      for (; r + 2 <= re; r += 2) runTile<2, 2>(t, r, v, rows, Y);
      for (; r < re; ++r) runTile<1, 2>(t, r, v, rows, Y);
    }
    for (; v < n; ++v) {
      size_t r = rb;
      if constexpr (T::kDense) {
        for (; r + 8 <= re; r += 8) runTile<8, 1>(t, r, v, rows, Y);
        for (; r + 4 <= re; r += 4) runTile<4, 1>(t, r, v, rows, Y);
      }
      for (; r < re; ++r) runTile<1, 1>(t, r, v, rows, Y);
    }
  }
}

template <class Decoder>
void run(const Decoder& d, const WeightView& w, const float* X, size_t n, float* Y, size_t r0,
         size_t r1) {
  runTiles(Tiles<Decoder>{d, X, w.cols}, n, r0, r1, w.rows, Y);
}

template <class BlockScale>
NibbleDecoder<BlockScale> nibbleDecoder(const WeightView& w, __m128i bf16Lo, __m128i bf16Hi, BlockScale bs) {
  return NibbleDecoder<BlockScale>{static_cast<const uint8_t*>(w.data), w.cols, _mm256_broadcastsi128_si256(bf16Lo),
                                   _mm256_broadcastsi128_si256(bf16Hi), bs};
}

}  // namespace

void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  const size_t cols = w.cols;
  switch (w.format) {
    case WeightFormat::F32:
      return run(F32Decoder{static_cast<const float*>(w.data), cols}, w, X, n, Y, r0, r1);
    case WeightFormat::BF16:
      return run(Bf16Decoder{static_cast<const uint16_t*>(w.data), cols}, w, X, n, Y, r0, r1);
    case WeightFormat::I8Row:
      return run(I8Decoder{static_cast<const int8_t*>(w.data), static_cast<const float*>(w.scales), cols},
                 w, X, n, Y, r0, r1);
    case WeightFormat::I4G64: {
      const float* s = static_cast<const float*>(w.scales);
      const size_t gpr = cols / kInt4Group;
      // nibble - 8 = -8..7 as bf16 (low bytes, high bytes).
      auto d = nibbleDecoder(w,
                             _mm_setr_epi8(0, char(0xE0), char(0xC0), char(0xA0), char(0x80), 0x40, 0, char(0x80), 0,
                                           char(0x80), 0, 0x40, char(0x80), char(0xA0), char(0xC0), char(0xE0)),
                             _mm_setr_epi8(char(0xC1), char(0xC0), char(0xC0), char(0xC0), char(0xC0), char(0xC0),
                                           char(0xC0), char(0xBF), 0, 0x3F, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40),
                             [s, gpr](size_t r, size_t b) { return s[r * gpr + b / 2]; });
      return run(d, w, X, n, Y, r0, r1);
    }
    case WeightFormat::MXFP4: {
      const uint8_t* s = static_cast<const uint8_t*>(w.scales);
      const size_t gpr = cols / kMxfp4Group;
      // Doubled e2m1 (0, 1, 2, 3, 4, 6, 8, 12 and negatives; code 8, -0, as +0) as
      // bf16 (low bytes, high bytes), so the exact weight is code*2 * (2^(s-127) * 0.5).
      auto d = nibbleDecoder(w,
                             _mm_setr_epi8(0, char(0x80), 0, 0x40, char(0x80), char(0xC0), 0, 0x40, 0, char(0x80), 0,
                                           0x40, char(0x80), char(0xC0), 0, 0x40),
                             _mm_setr_epi8(0, 0x3F, 0x40, 0x40, 0x40, 0x40, 0x41, 0x41, 0, char(0xBF), char(0xC0),
                                           char(0xC0), char(0xC0), char(0xC0), char(0xC1), char(0xC1)),
                             [s, gpr](size_t r, size_t b) { return kHalfUe8m0[s[r * gpr + b]]; });
      return run(d, w, X, n, Y, r0, r1);
    }
  }
}

}  // namespace k3::kernels::avx2
