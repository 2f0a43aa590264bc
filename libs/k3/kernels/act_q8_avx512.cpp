// AVX-512 VNNI IDOT kernel: MXFP4 weights x int8 activations, sixteen
// 32-groups per step with one group per int32 lane.
//
// A row's packed bytes for groups c..c+15 (256 bytes, four loads) are
// transposed inside each 128-bit lane (eight unpacks, loadTransposed4) so
// that vector k holds packed dword k (columns 8k..8k+7) of every group, one
// group per lane (lane 4q + m: group 4m + q); its low nibbles (columns
// 8k+0,2,4,6) and high nibbles (8k+1,3,5,7) go through a 16-entry table
// (vpermb, AVX512_VBMI: no mask for the low nibble) to u = doubled e2m1 + 12
// (u8, [0, 24]), as vpdpbusd's unsigned operand needs.
// The activations are copied once per call into the matching order (per
// chunk of 16 groups: the eight byte vectors, then -12 * the group's sum of
// xq, then xs), so per vector and chunk eight vpdpbusd, started from
// -12*sum, leave the exact integer dot of doubled e2m1 x xq of each group in
// its lane, and one convert, one multiply and one FMA apply the sixteen
// factors 2^(s-127)*0.5*xs at once. The driver sums the row's lanes
// (matmul_driver_avx512.h). The same operations for every vector: matmul ==
// matvec bit for bit.
//
// Rows whose group count is not a multiple of 16 are packed sixteen at a
// time (block16, below) so no lane idles. A row's groups then sit in lanes
// shifted by a multiple of 4 positions, which moves them between the lanes
// 4q + m only in m, cyclically; the driver's tree adds lanes of equal m
// first, then the m pairs {0, 2} and {1, 3}, which a cyclic shift keeps, so
// a packed row's sum is the unpacked one bit for bit (a row range that cuts
// a block changes no result).
//
// Against two groups per step (|w| and a masked negate of xq per vector, then
// a convert, a permute and an FMA for every two groups) this does a quarter
// of the per-vector work (quant_bench MatmulQ8Shape, in the commit message).
// Thread-safe: no shared mutable state.

#include <algorithm>

#include "k3/kernels/avx512_intrinsics.h"

#include "k3/codec/mxfp4.h"
#include "k3/kernels/act_q8.h"
#include "k3/kernels/group_transpose_avx512.h"
#include "k3/kernels/matmul_driver_avx512.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx512 {

namespace {

constexpr int kG16VecGroup = 8;
constexpr size_t kChunkGroups = 16;
// Per chunk and vector: 8 x 64 activation bytes, 16 int32 corrections, 16 xs.
constexpr size_t kChunkBytes = 8 * 64 + 64 + 64;
constexpr size_t kCorrOffset = 8 * 64, kScaleOffset = 8 * 64 + 64;
// Re-laid activations up to this size live on the stack: a routed expert's
// call in prefill (a few tokens, up to 4 chunks each) does not allocate.
constexpr size_t kG16StackBytes = 64 << 10;
constexpr int kOffset = 12;  // table = doubled e2m1 + 12

size_t chunksOf(size_t groups) { return (groups + kChunkGroups - 1) / kChunkGroups; }

// Packed rows. A row of G groups, G not a multiple of 16, leaves lanes of
// its last chunk empty (the medium preset's 384-column expert rows: 12 of
// 16). A row's weights and scales follow the previous row's without a gap,
// so sixteen rows are 16 G groups: G full chunks instead of 16 ceil(G/16).
// Chunk c of such a block holds the groups (16c + i) mod G of one or two
// rows; the activations are re-laid once more in each of the C = lcm(G,
// 16) / 16 rotations that occur. Used when a chunk never holds parts of
// three rows (G = 8, 12 or G > 16) and C is small.
constexpr size_t kMaxPackedRotations = 24, kMaxPackedGroups = kMaxPackedRotations * kChunkGroups;
size_t packedChunksOf(size_t groups) {
  if (groups % kChunkGroups == 0 || !(groups == 8 || groups == 12 || groups > kChunkGroups)) return 0;
  size_t a = groups, b = kChunkGroups;  // gcd
  while (b) a %= b, std::swap(a, b);
  const size_t rotations = groups / a;
  return rotations <= kMaxPackedRotations ? rotations : 0;
}

// kLanesBelow[e]: the lanes (kLaneGroup order) of groups 0..e-1 of a chunk.
struct LanesBelow {
  __mmask16 mask[kChunkGroups + 1];
  constexpr LanesBelow() : mask{} {
    for (int e = 0; e <= int(kChunkGroups); ++e)
      for (int l = 0; l < 16; ++l)
        if (laneGroup(l) < e) mask[e] = __mmask16(mask[e] | (1u << l));
  }
};
inline constexpr LanesBelow kLanesBelow{};

// Up to 16 groups (x: 32 bytes each, xs: one scale each) into one chunk of
// the layout above; lanes past the last group are zero (activations,
// correction and xs), so they add exact zeros. One in-lane byte shuffle
// puts each group's 8 dwords in the order [lo0 lo1 hi0 hi1 lo2 lo3 hi2
// hi3] (lo k = columns 8k+0,2,4,6), a 16 x 8 dword transpose (24 permutes)
// makes one vector per dword with a group per lane (kLaneGroup order), and
// vpdpbusd against 12s gives the corrections.
void relayoutChunk(const int8_t* x, const float* xs, size_t ng, int8_t* o) {
  const GroupTranspose transpose;
  const __m512i split = _mm512_broadcast_i32x4(
      _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  const __m512i twelve = _mm512_set1_epi8(kOffset);
  constexpr int kVectorOf[8] = {0, 1, 4, 5, 2, 3, 6, 7};  // dword d of a group -> vector index
  __m512i R[8], A[8];
  for (size_t m = 0; m < 8; ++m)
    R[m] = _mm512_shuffle_epi8(loadUpTo64(x + 64 * m, 32 * ng > 64 * m ? 32 * ng - 64 * m : 0), split);
  transpose(R, A);
  __m512i sum = _mm512_setzero_si512();
  for (int d = 0; d < 8; ++d) {
    _mm512_storeu_si512(o + 64 * kVectorOf[d], A[d]);
    sum = _mm512_dpbusd_epi32(sum, twelve, A[d]);
  }
  _mm512_storeu_si512(o + kCorrOffset, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
  _mm512_storeu_ps(reinterpret_cast<float*>(o + kScaleOffset),
                   _mm512_permutexvar_ps(_mm512_loadu_si512(kLaneGroup.dwords),
                                         _mm512_maskz_loadu_ps(__mmask16((1u << ng) - 1), xs)));
}

// One activation vector: its chunks in order, then (packed rows) its C
// rotations. Rotation k is the 16 groups from (16 k) mod G on, wrapping
// around: each is a window of one copy of the groups laid out G + 16 long.
void relayout(const int8_t* x, const float* xs, size_t groups, int8_t* out) {
  const size_t chunks = chunksOf(groups);
  for (size_t c = 0; c < chunks; ++c)
    relayoutChunk(x + 32 * kChunkGroups * c, xs + kChunkGroups * c,
                  std::min(kChunkGroups, groups - kChunkGroups * c), out + c * kChunkBytes);
  const size_t rotations = packedChunksOf(groups);
  if (rotations == 0) return;
  // packedChunksOf keeps G / gcd(G, 16) <= 24, so G <= 384.
  alignas(64) int8_t wx[32 * (kMaxPackedGroups + kChunkGroups)];
  float ws[kMaxPackedGroups + kChunkGroups];
  for (size_t g = 0; g < groups + kChunkGroups;) {
    const size_t take = std::min(groups, groups + kChunkGroups - g);
    std::copy_n(x, 32 * take, wx + 32 * g);
    std::copy_n(xs, take, ws + g);
    g += take;
  }
  for (size_t k = 0; k < rotations; ++k) {
    const size_t first = kChunkGroups * k % groups;
    relayoutChunk(wx + 32 * first, ws + first, kChunkGroups, out + (chunks + k) * kChunkBytes);
  }
}

struct Mxfp4G16Rows {
  const int8_t* X;  // re-laid activations, [n, stride] (set by runRelaid16)
  size_t stride;    // (chunksOf(groups) + packedChunksOf(groups)) * kChunkBytes
  size_t cols;
  const uint8_t* data;    // packed e2m1 [rows, cols / 2]
  const uint8_t* scales;  // ue8m0 [rows, groups]
  const float* rowScales = nullptr;  // none: the factors are per group
  static constexpr bool kPacksRows = true;
  static constexpr bool kBlocksColumns = false;
  static constexpr bool kPairsRows = false;

  // Doubled e2m1 + 12 by the code's low 4 bits: vpermb reads 6 index bits,
  // so the 16 entries repeat four times and no mask is needed.
  static __m512i decodeTable() {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
  }

  // The 16-group chunk of packed codes at pc (`bytes` of 256 there) as eight
  // u8 vectors W (vector k: columns 8k'+0,2,4,6 / +1,3,5,7 of dword k' = k % 4,
  // low nibbles first), and its 16 ue8m0 scales at s (`lanes` of them there)
  // as 0.5 * 2^(s-127) per lane, all in kLaneGroup order.
  static void decodeChunk(const uint8_t* pc, size_t bytes, const uint8_t* s, __mmask16 lanes, __m512i lut,
                          __m512i (&W)[8], __m512& sw) {
    // T[k] = packed dword k of the sixteen groups, in kLaneGroup order.
    __m512i T[4];
    loadTransposed4(pc, bytes, T);
    for (int k = 0; k < 4; ++k) {
      W[k] = _mm512_permutexvar_epi8(T[k], lut);
      W[4 + k] = _mm512_permutexvar_epi8(_mm512_srli_epi16(T[k], 4), lut);
    }
    const __m128i scaleOrder = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kLaneGroup.bytes));
    sw = _mm512_mul_ps(
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_maskz_loadu_epi8(lanes, s), scaleOrder)), 23)),
        _mm512_set1_ps(0.5f));
  }

  // The exact integer dots of one chunk's sixteen groups with the re-laid
  // activation chunk at a, as f32 lanes: eight vpdpbusd started from
  // -12 * sum(xq), in two chains.
  static __m512 chunkDots(const __m512i (&W)[8], const int8_t* a) {
    __m512i d0 = _mm512_loadu_si512(a + kCorrOffset), d1 = _mm512_setzero_si512();
    d0 = _mm512_dpbusd_epi32(d0, W[0], _mm512_loadu_si512(a + 0 * 64));
    d1 = _mm512_dpbusd_epi32(d1, W[4], _mm512_loadu_si512(a + 4 * 64));
    d0 = _mm512_dpbusd_epi32(d0, W[1], _mm512_loadu_si512(a + 1 * 64));
    d1 = _mm512_dpbusd_epi32(d1, W[5], _mm512_loadu_si512(a + 5 * 64));
    d0 = _mm512_dpbusd_epi32(d0, W[2], _mm512_loadu_si512(a + 2 * 64));
    d1 = _mm512_dpbusd_epi32(d1, W[6], _mm512_loadu_si512(a + 6 * 64));
    d0 = _mm512_dpbusd_epi32(d0, W[3], _mm512_loadu_si512(a + 3 * 64));
    d1 = _mm512_dpbusd_epi32(d1, W[7], _mm512_loadu_si512(a + 7 * 64));
    return _mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1));
  }

  // chunkDots with the activation chunk in registers (A, corr). Not the
  // other way round: chunkDots as loads into an array and dotsOf made GCC
  // 12 slower on the packed rows (512 x 384, 8 vectors: 104 -> 97 G/s).
  static __m512 dotsOf(const __m512i (&W)[8], const __m512i (&A)[8], __m512i corr) {
    __m512i d0 = corr, d1 = _mm512_setzero_si512();
    d0 = _mm512_dpbusd_epi32(d0, W[0], A[0]);
    d1 = _mm512_dpbusd_epi32(d1, W[4], A[4]);
    d0 = _mm512_dpbusd_epi32(d0, W[1], A[1]);
    d1 = _mm512_dpbusd_epi32(d1, W[5], A[5]);
    d0 = _mm512_dpbusd_epi32(d0, W[2], A[2]);
    d1 = _mm512_dpbusd_epi32(d1, W[6], A[6]);
    d0 = _mm512_dpbusd_epi32(d0, W[3], A[3]);
    d1 = _mm512_dpbusd_epi32(d1, W[7], A[7]);
    return _mm512_cvtepi32_ps(_mm512_add_epi32(d0, d1));
  }

  static const float* xsOf(const int8_t* a) { return reinterpret_cast<const float*>(a + kScaleOffset); }

  // Chunk c's codes at pc and the scales at s (a row's, or sixteen packed
  // rows'): non-temporal, kStreamAhead ahead, the scales as far in their own
  // stream (1/16 of the bytes: one line every fourth chunk).
  static void prefetchChunkStream(const uint8_t* pc, const uint8_t* s, size_t c) {
    for (int l = 0; l < 4; ++l) prefetchStream(pc + 64 * l);
    if (c % 4 == 0) __builtin_prefetch(s + kChunkGroups * c + kStreamAhead / 16, 0, 0);
  }

  template <int NV>
  void row(size_t r, size_t v0, __m512* out) const {
    const size_t groups = cols / kMxfp4Group, chunks = chunksOf(groups);
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    __m512 acc[NV];
    for (int j = 0; j < NV; ++j) acc[j] = _mm512_setzero_ps();
    const __m512i lut = decodeTable();
    for (size_t c = 0; c < chunks; ++c) {
      const size_t ng = std::min(kChunkGroups, groups - kChunkGroups * c);
      const uint8_t* pc = p + 16 * kChunkGroups * c;
      // Non-temporal, kStreamAhead ahead, and the scale bytes as far in
      // their own stream, for any number of vectors (an expert's matrix
      // streams from DRAM once per step): MatvecQ8 MXFP4 from DRAM, 2
      // threads, 41.7-46 -> 49.5-51.8 GB/s on Zen 5 (a T0 prefetch 2 KiB
      // ahead had cost one vector 40 % on Zen 4); two vectors
      // (MatmulQ8Stream MXFP4 2: an expert two conversations picked)
      // 37-43 -> 48-52, prefill chunks (MatmulQ8 MXFP4 4 and 16,
      // ExpertStreamQ8) unchanged within noise.
      prefetchChunkStream(pc, s, c);
      __m512i W[8];
      __m512 sw;
      decodeChunk(pc, 16 * ng, s + kChunkGroups * c, __mmask16((1u << ng) - 1), lut, W, sw);
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + c * kChunkBytes;
        acc[j] = _mm512_fmadd_ps(chunkDots(W, a), _mm512_mul_ps(sw, _mm512_loadu_ps(xsOf(a))), acc[j]);
      }
    }
    for (int j = 0; j < NV; ++j) out[j] = acc[j];
  }

  // Rows of whole chunks (G a multiple of 16): rows r..r+15 a chunk at a
  // time, the chunk's activations of the NV vectors read once for the
  // sixteen rows (the compiler keeps what fits in registers, the rest in a
  // stack copy) where row() reloads them for every row; per lane the same
  // fma in the same chunk order as row(), so the same bits.
  // Against row(), one thread, G products/s: 384 x 512 from L1/L2, 1
  // vector 67 -> 76, 2 89 -> 112, 4 110 -> 140, 8 114 -> 141; from DRAM
  // 2 60 -> 68, 4 86 -> 110, 8 104 -> 119. Rows of several chunks (K3's
  // experts) with one or two vectors stay with row(): from DRAM, striding
  // over 16 rows was slower there (512 x 3584, 2 vectors: 60 -> 52), from
  // four vectors up it is not (4: 84 -> 88, 8: 84 -> 123). The prefetch
  // walks the next sixteen rows in order, a chunk's worth per step.
  template <int NV>
  void wholeChunks16(size_t r, size_t v0, __m512 (*acc)[16]) const {
    const size_t groups = cols / kMxfp4Group, chunks = groups / kChunkGroups;
    const __m512i lut = decodeTable();
    for (size_t c = 0; c < chunks; ++c) {
      __m512i A[NV][8], corr[NV];
      __m512 xs[NV];
      for (int j = 0; j < NV; ++j) {
        const int8_t* a = X + (v0 + j) * stride + c * kChunkBytes;
        for (int q = 0; q < 8; ++q) A[j][q] = _mm512_loadu_si512(a + 64 * q);
        corr[j] = _mm512_loadu_si512(a + kCorrOffset);
        xs[j] = _mm512_loadu_ps(xsOf(a));
      }
      for (size_t i = 0; i < 16; ++i) {
        const uint8_t* pc = data + (r + i) * cols / 2 + 16 * kChunkGroups * c;
        const uint8_t* next = data + (r + 16) * cols / 2 + 16 * kChunkGroups * (16 * c + i);
        for (int l = 0; l < 4; ++l) __builtin_prefetch(next + 64 * l);
        __m512i W[8];
        __m512 sw;
        decodeChunk(pc, 16 * kChunkGroups, scales + (r + i) * groups + kChunkGroups * c, __mmask16(0xFFFF), lut, W, sw);
        for (int j = 0; j < NV; ++j)
          acc[j][i] = _mm512_fmadd_ps(dotsOf(W, A[j], corr[j]), _mm512_mul_ps(sw, xs[j]),
                                      c == 0 ? _mm512_setzero_ps() : acc[j][i]);
      }
    }
  }

  // Rows r..r+15 (r a multiple of 16) at once when G allows (whole chunks,
  // or packed), as acc[j][i] = the lanes of row r + i for vector v0 + j;
  // false otherwise.
  template <int NV>
  bool block16(size_t r, size_t v0, __m512 (*acc)[16]) const {
    const size_t groups = cols / kMxfp4Group;
    if (r % 16 != 0) return false;
    if (groups % kChunkGroups == 0) {
      if (NV <= 2 && groups > kChunkGroups) return false;
      wholeChunks16<NV>(r, v0, acc);
      return true;
    }
    const size_t rotations = packedChunksOf(groups);
    if (rotations == 0) return false;
    const uint8_t* p = data + r * cols / 2;
    const uint8_t* s = scales + r * groups;
    const int8_t* rotated = X + chunksOf(groups) * kChunkBytes;
    const __m512i lut = decodeTable();
    __m512 cur[NV];  // the row being summed
    for (int j = 0; j < NV; ++j) cur[j] = _mm512_setzero_ps();
    size_t row = 0;
    for (size_t c = 0; c < groups; ++c) {  // 16 rows of G groups: G chunks
      const uint8_t* pc = p + 16 * kChunkGroups * c;
      if constexpr (NV > 1) {
        for (int l = 0; l < 4; ++l) __builtin_prefetch(pc + kPrefetchAhead + 64 * l);
      } else {  // one vector (decode) streams the expert from DRAM, as row() does: quant_bench
                // ExpertStreamQ8 (medium's 512 x 384) 1 vector 32-33 -> 42-44 G weights/s
        prefetchChunkStream(pc, s, c);
      }
      __m512i W[8];
      __m512 sw;
      decodeChunk(pc, 16 * kChunkGroups, s + kChunkGroups * c, __mmask16(0xFFFF), lut, W, sw);
      const int8_t* a0 = rotated + (c % rotations) * kChunkBytes;
      // Groups of this chunk still in `row` (at least one); fewer than 16:
      // the next row starts inside, and may end with the chunk.
      const size_t left = (row + 1) * groups - kChunkGroups * c;
      if (left >= kChunkGroups) {
        for (int j = 0; j < NV; ++j) {
          const int8_t* a = a0 + (v0 + j) * stride;
          cur[j] = _mm512_fmadd_ps(chunkDots(W, a), _mm512_mul_ps(sw, _mm512_loadu_ps(xsOf(a))), cur[j]);
        }
      } else {
        const __mmask16 mine = kLanesBelow.mask[left];
        for (int j = 0; j < NV; ++j) {
          const int8_t* a = a0 + (v0 + j) * stride;
          const __m512 dots = chunkDots(W, a), f = _mm512_mul_ps(sw, _mm512_loadu_ps(xsOf(a)));
          acc[j][row] = _mm512_mask3_fmadd_ps(dots, f, cur[j], mine);
          cur[j] = _mm512_maskz_mul_ps(__mmask16(~mine), dots, f);
        }
        ++row;
      }
      if ((row + 1) * groups == kChunkGroups * (c + 1)) {
        for (int j = 0; j < NV; ++j) acc[j][row] = cur[j], cur[j] = _mm512_setzero_ps();
        ++row;
      }
    }
    return true;
  }
};

}  // namespace

void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  const size_t groups = w.cols / kQ8Group;
  const Mxfp4G16Rows k{nullptr, (chunksOf(groups) + packedChunksOf(groups)) * kChunkBytes, w.cols,
                       static_cast<const uint8_t*>(w.data), static_cast<const uint8_t*>(w.scales)};
  runRelaid16<kG16VecGroup, kG16StackBytes>(k, relayout, Xq, Xs, n, r0, r1, w.rows, Y);
}

}  // namespace k3::kernels::avx512
