// AVX-512 matmul kernels (matvec is n = 1). Dense formats are widened to f32
// 16 columns at a time; 4-bit formats decode with a 16-entry f32 table held in
// one register (vpermps uses only the low 4 index bits), scaled per block so
// each lookup returns the dequantised weight: e2m1 * 2^(s-127) exactly for
// MXFP4, (nibble-8) * s for int4 (spec 5.4's dequant), four accumulators per
// vector and a fixed-order reduction; dense formats as DenseRows below.
// Thread-safe: no shared mutable state.
#include "k3/kernels/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/io/stack_or_heap.h"
#include "k3/kernels/matmul_driver.h"
#include "k3/kernels/matmul_driver_avx512.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx512 {

namespace {

constexpr int kVecGroup = 4;  // 32 zmm: 4 vectors x 4 accumulators + decode
constexpr int kDenseVecGroup = 4;  // DenseRows: pairs of rows x 4 vectors x 2 accumulators (8 vectors: half the speed)

// F32 / BF16 / I8: Load16(r, i, mask) gives 16 weights as f32 (masked lanes
// 0). Each (row, vector) has two accumulators (even and odd 16-column
// steps) whose sum's lanes the driver adds sixteen rows at a time
// (matmul_driver_avx512.h) and scales by rowScales (I8). Rows go in pairs
// for two to four vectors (rowPair: each activation load feeds two rows,
// with row()'s operations in row()'s order): one row at a time the FMAs
// waited on their loads (608 x 768 BF16, 64 vectors: 29.6 -> 46 G MAC/s;
// eight vectors a row at a time ran no faster than before). One vector
// (decode, from DRAM) goes a row at a time: pairs halved its rate there.
// One vector streams its matrix from DRAM once: the hardware prefetcher
// alone left the int8 IDOT matvec at 0.55-0.7 of a plain read's bandwidth
// on Zen 5; a non-temporal prefetch 8 KiB ahead of the row being read took
// it to 0.8-0.95 (quant_bench MatvecQ8 I8Row, 2 threads: 37.5 -> 55-58 GB/s
// beside StreamRead 64-71; the 2 KiB T0 prefetch of the batched path had
// cost decode a third on Zen 4). Batches keep their own prefetch.

inline __mmask16 tailMask(size_t left) { return left >= 16 ? __mmask16(0xffff) : __mmask16((1u << left) - 1); }

// 16 int8 weights at p as f32 (the masked form reads only the mask's lanes).
inline __m512 widenI8(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 widenI8(const int8_t* p, __mmask16 m) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}

template <class Load16>
struct DenseRows {
  const float* X;
  size_t cols;
  Load16 load16;
  const float* rowScales;  // I8: s[row]; else nullptr
  const uint8_t* bytes;    // the weights, elemBytes per column: what one vector prefetches
  size_t elemBytes;
  static constexpr bool kPacksRows = false;
  static constexpr bool kBlocksColumns = false;
  static constexpr bool kPairsRows = true;

  template <int NV>
  void row(size_t r, size_t v0, __m512* out) const {
    __m512 a0[NV], a1[NV];
    for (int j = 0; j < NV; ++j) a0[j] = a1[j] = _mm512_setzero_ps();
    const __mmask16 all = 0xffff;
    size_t i = 0;
    for (; i + 32 <= cols; i += 32) {
      if constexpr (NV == 1)
        for (size_t o = 0; o < 32 * elemBytes; o += 64) prefetchStream(bytes + (r * cols + i) * elemBytes + o);
      const __m512 w0 = load16(r, i, all), w1 = load16(r, i + 16, all);
      for (int j = 0; j < NV; ++j) {
        const float* x = X + (v0 + j) * cols + i;
        a0[j] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x), a0[j]);
        a1[j] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), a1[j]);
      }
    }
    for (; i < cols; i += 16) {
      const __mmask16 m = tailMask(cols - i);
      const __m512 w = load16(r, i, m);
      for (int j = 0; j < NV; ++j) a0[j] = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(m, X + (v0 + j) * cols + i), a0[j]);
    }
    for (int j = 0; j < NV; ++j) out[j] = _mm512_add_ps(a0[j], a1[j]);
  }

  template <int NV>
  void rowPair(size_t r, size_t v0, __m512* out0, __m512* out1) const {
    if constexpr (NV > 4 || NV == 1) {  // one vector (decode, from DRAM): pairs halved the rate
      row<NV>(r, v0, out0);
      row<NV>(r + 1, v0, out1);
    } else {
      __m512 a0[NV], a1[NV], b0[NV], b1[NV];
      for (int j = 0; j < NV; ++j) a0[j] = a1[j] = b0[j] = b1[j] = _mm512_setzero_ps();
      const __mmask16 all = 0xffff;
      size_t i = 0;
      for (; i + 32 <= cols; i += 32) {
        const __m512 u0 = load16(r, i, all), u1 = load16(r, i + 16, all);
        const __m512 w0 = load16(r + 1, i, all), w1 = load16(r + 1, i + 16, all);
        for (int j = 0; j < NV; ++j) {
          const float* x = X + (v0 + j) * cols + i;
          const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
          a0[j] = _mm512_fmadd_ps(u0, x0, a0[j]);
          b0[j] = _mm512_fmadd_ps(w0, x0, b0[j]);
          a1[j] = _mm512_fmadd_ps(u1, x1, a1[j]);
          b1[j] = _mm512_fmadd_ps(w1, x1, b1[j]);
        }
      }
      for (; i < cols; i += 16) {
        const __mmask16 m = tailMask(cols - i);
        const __m512 u = load16(r, i, m), w = load16(r + 1, i, m);
        for (int j = 0; j < NV; ++j) {
          const __m512 x = _mm512_maskz_loadu_ps(m, X + (v0 + j) * cols + i);
          a0[j] = _mm512_fmadd_ps(u, x, a0[j]);
          b0[j] = _mm512_fmadd_ps(w, x, b0[j]);
        }
      }
      for (int j = 0; j < NV; ++j) out0[j] = _mm512_add_ps(a0[j], a1[j]), out1[j] = _mm512_add_ps(b0[j], b1[j]);
    }
  }
};

template <class Load16>
void runDense(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1, Load16 load16,
              size_t elemBytes, const float* rowScales = nullptr) {
  DenseRows<Load16> k{X, w.cols, load16, rowScales, static_cast<const uint8_t*>(w.data), elemBytes};
  runBlocked16<kDenseVecGroup>(k, n, r0, r1, w.rows, Y);
}

// One vector (decode) on an int8 matrix with f32 activations: DenseRows'
// row, eight rows at a time. A row's two accumulators are two FMA chains,
// and one row at a time left the core waiting on FMA latency; eight rows
// interleaved at the same columns keep 16 chains in flight, each row's
// chains taking the same FMAs in the same order as DenseRows::row (so the
// same bits, and matmul == matvec still). Each row prefetches the same
// columns of the tile kStreamAhead or more on (the next tiles' rows): a row
// prefetching past its own end would land in its neighbour. k3-run bench b8
// f32, alternating: KDA 24.9, 26.7 -> 23.1, 24.2 ms per token, MLA, the MoE
// input and combine projections 4-14 % less. Row pairs (four chains) had
// been slower from DRAM (quant_bench Matvec I8Row, 2 threads: 49.8, 49.5 ->
// 40.4, 40.0 GB/s).
struct I8Load16 {
  const int8_t* d;
  size_t cols;
  __m512 operator()(size_t r, size_t i, __mmask16 m) const { return widenI8(d + r * cols + i, m); }
};

struct I8RowTiles : DenseRows<I8Load16> {
  static constexpr bool kPacksRows = true;  // rows of a run shorter than 16 go through DenseRows::row
  static constexpr bool kPairsRows = false;
  static constexpr int kTile = 8;

  // Rows r .. r + 15 into acc[0][0 .. 15], two tiles of eight.
  template <int NV>
  bool block16(size_t r, size_t, __m512 (*acc)[16]) const {
    static_assert(NV == 1, "I8RowTiles is the one-vector kernel");
    const int8_t* data = load16.d;
    const size_t ahead = tileStreamOffset(kTile * cols);
    for (int t = 0; t < 16; t += kTile) {
      const int8_t* p[kTile];
      __m512 a0[kTile], a1[kTile];
      for (int k = 0; k < kTile; ++k) p[k] = data + (r + t + k) * cols, a0[k] = a1[k] = _mm512_setzero_ps();
      size_t i = 0;
      for (; i + 32 <= cols; i += 32) {
        const __m512 x0 = _mm512_loadu_ps(X + i), x1 = _mm512_loadu_ps(X + i + 16);
        for (int k = 0; k < kTile; ++k) {
          prefetchStream(p[k] + ahead + i);
          a0[k] = _mm512_fmadd_ps(widenI8(p[k] + i), x0, a0[k]);
          a1[k] = _mm512_fmadd_ps(widenI8(p[k] + i + 16), x1, a1[k]);
        }
      }
      for (; i < cols; i += 16) {
        const __mmask16 m = tailMask(cols - i);
        const __m512 x = _mm512_maskz_loadu_ps(m, X + i);
        for (int k = 0; k < kTile; ++k) a0[k] = _mm512_fmadd_ps(widenI8(p[k] + i, m), x, a0[k]);
      }
      for (int k = 0; k < kTile; ++k) acc[0][t + k] = _mm512_add_ps(a0[k], a1[k]);
    }
    return true;
  }
};

// MXFP4 / I4: 16 packed bytes = 32 columns per block, column c of a block
// in byte c / 2, low nibble first. The weights are decoded with a table
// lookup (vpermps: 16 entries, scaled per block, reading only the low 4
// bits of each index), and the indices come from a broadcast load and a
// per-lane shift, no shuffle: a block's first 8 bytes broadcast as a qword
// give lane j the dword holding nibbles (j % 2) * 8 .. + 7, and shifting it
// right by 4 * (j / 2) puts nibble kLaneColumn(j) = (j % 2) * 8 + j / 2 at
// the bottom. So lane j of each 16-column half works on that column, and
// the activations are re-laid the same way once per call. Every lane then
// adds the same products in the same order as a column-ordered lane, only
// in another lane; the lanes are put back in column order before the
// reduction, so the sum is the same bit for bit. The column-ordered decode
// (a zero extension and two cross-lane interleaves per block) ran at 13 GB/s
// a core with the weights in L2: four shuffles per 32 weights, which is the
// port it waited on.
constexpr int laneColumn(int j) { return (j % 2) * 8 + j / 2; }

inline __m512i laneColumns() {
  return _mm512_setr_epi32(laneColumn(0), laneColumn(1), laneColumn(2), laneColumn(3), laneColumn(4),
                           laneColumn(5), laneColumn(6), laneColumn(7), laneColumn(8), laneColumn(9),
                           laneColumn(10), laneColumn(11), laneColumn(12), laneColumn(13), laneColumn(14),
                           laneColumn(15));
}

// The lane that holds column c: the inverse of laneColumn.
constexpr int columnLane(int c) { return c < 8 ? 2 * c : 2 * (c - 8) + 1; }
constexpr bool columnLaneInvertsLaneColumn() {
  for (int c = 0; c < 16; ++c)
    if (laneColumn(columnLane(c)) != c) return false;
  return true;
}
static_assert(columnLaneInvertsLaneColumn());

inline __m512i columnLanes() {
  return _mm512_setr_epi32(columnLane(0), columnLane(1), columnLane(2), columnLane(3), columnLane(4), columnLane(5),
                           columnLane(6), columnLane(7), columnLane(8), columnLane(9), columnLane(10),
                           columnLane(11), columnLane(12), columnLane(13), columnLane(14), columnLane(15));
}

template <class BlockScale>
struct NibbleRows {
  const float* X;  // re-laid: each 16 columns in laneColumn order
  size_t cols;
  const uint8_t* data;
  __m512 base;            // code -> unscaled value
  BlockScale blockScale;  // (row, 32-column block) -> f32 multiplier

  // Two zmm of weights for 32-column block b, lanes in laneColumn order.
  inline void decode(const uint8_t* p, size_t r, size_t b, __m512& w0, __m512& w1) const {
    const __m512i shifts = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
    uint64_t q0, q1;
    std::memcpy(&q0, p + 16 * b, 8);
    std::memcpy(&q1, p + 16 * b + 8, 8);
    const __m512 tbl = _mm512_mul_ps(base, _mm512_set1_ps(blockScale(r, b)));
    w0 = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi64(int64_t(q0)), shifts), tbl);
    w1 = _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi64(int64_t(q1)), shifts), tbl);
  }

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    __m512 acc[NV][4];
    const float* x[NV];
    for (int j = 0; j < NV; ++j) {
      x[j] = X + (v0 + j) * cols;
      for (int k = 0; k < 4; ++k) acc[j][k] = _mm512_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const size_t blocks = cols / 32;
    size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
      if constexpr (NV == 1) prefetchStream(p + 16 * b);
      __m512 w[4];
      decode(p, r, b, w[0], w[1]);
      decode(p, r, b + 1, w[2], w[3]);
      for (int j = 0; j < NV; ++j)
        for (int k = 0; k < 4; ++k)
          acc[j][k] = _mm512_fmadd_ps(w[k], _mm512_loadu_ps(x[j] + 32 * b + 16 * k), acc[j][k]);
    }
    if (b < blocks) {
      __m512 w0, w1;
      decode(p, r, b, w0, w1);
      for (int j = 0; j < NV; ++j) {
        acc[j][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[j] + 32 * b), acc[j][0]);
        acc[j][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[j] + 32 * b + 16), acc[j][1]);
      }
    }
    const __m512i inColumnOrder = columnLanes();
    for (int j = 0; j < NV; ++j) out[j] = sum(acc[j], inColumnOrder);
  }

  // kTile rows of one vector (decode), interleaved at the same columns. A
  // row's four accumulators are four FMA chains, and one row at a time the
  // core waited on them, not on its shuffles: a loop of this decode ran at
  // the same speed with the shift, the table lookup or the block scale left
  // out, and 1.2 x as fast with four rows (two: 1.1 x; quant_bench Matvec
  // MXFP4/avx512/hot 17.9 -> 20.0 GB/s). Each row takes row<1>'s FMAs in
  // row<1>'s order, so its bits are row<1>'s. Each row prefetches the same
  // columns kStreamAhead or more on (rows of the next tiles), as I8RowTiles.
  static constexpr int kTile = 4;
  void tile(size_t r, float* out) const {
    __m512 acc[kTile][4];
    const uint8_t* p[kTile];
    for (int k = 0; k < kTile; ++k) {
      p[k] = data + (r + k) * cols / 2;
      for (int q = 0; q < 4; ++q) acc[k][q] = _mm512_setzero_ps();
    }
    const size_t blocks = cols / 32;
    const size_t ahead = tileStreamOffset(kTile * cols / 2);
    size_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
      __m512 x[4];
      for (int q = 0; q < 4; ++q) x[q] = _mm512_loadu_ps(X + 32 * b + 16 * q);
      for (int k = 0; k < kTile; ++k) {
        prefetchStream(p[k] + ahead + 16 * b);
        __m512 w[4];
        decode(p[k], r + k, b, w[0], w[1]);
        decode(p[k], r + k, b + 1, w[2], w[3]);
        for (int q = 0; q < 4; ++q) acc[k][q] = _mm512_fmadd_ps(w[q], x[q], acc[k][q]);
      }
    }
    if (b < blocks) {
      const __m512 x0 = _mm512_loadu_ps(X + 32 * b), x1 = _mm512_loadu_ps(X + 32 * b + 16);
      for (int k = 0; k < kTile; ++k) {
        __m512 w0, w1;
        decode(p[k], r + k, b, w0, w1);
        acc[k][0] = _mm512_fmadd_ps(w0, x0, acc[k][0]);
        acc[k][1] = _mm512_fmadd_ps(w1, x1, acc[k][1]);
      }
    }
    const __m512i inColumnOrder = columnLanes();
    for (int k = 0; k < kTile; ++k) out[k] = sum(acc[k], inColumnOrder);
  }

 private:
  // A row's result: its four chains added pairwise, the lanes put back in
  // column order, then the fixed reduction.
  static float sum(const __m512 (&acc)[4], __m512i inColumnOrder) {
    const __m512 lanes = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    return _mm512_reduce_add_ps(_mm512_permutexvar_ps(inColumnOrder, lanes));
  }
};

// Scratch for the re-laid activations: on the stack up to this many floats
// (a routed expert's 3584 columns, any decode matvec of a 4-bit matrix up to
// 8192 columns), else on the heap once per call.
constexpr size_t kStackRelaidFloats = 8192;

// tileRows: one vector goes through NibbleRows::tile. For MXFP4 (the routed
// experts, each thread streaming whole experts) k3-run bench b8 f32,
// alternating: experts 35.3, 31.1, 30.9, 32.8 -> 30.3, 27.7, 29.3, 26.1 ms
// per token; decode 11.5-13.8 -> 11.9-14.4 tok/s, faster in 5 of 6 pairs.
// Not for int4-g64 (the dense matrices at --bits 4, rows
// split over the threads): from DRAM, four rows' streams at once read more
// slowly (quant_bench Matvec I4G64, 2 threads: 37.0 -> 33.7 GB/s; bench b4
// f32: KDA, MoE input and combine 3-15 % slower).
template <class BlockScale>
void runNibbles(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1,
                __m512 base, BlockScale bs, bool tileRows) {
  if (n == 0 || r0 == r1) return;
  StackOrHeap<float, kStackRelaidFloats> relaid(n * w.cols);
  const __m512i order = laneColumns();
  for (size_t i = 0; i < n * w.cols; i += 16)  // cols % 32 == 0
    _mm512_storeu_ps(relaid.data() + i, _mm512_permutexvar_ps(order, _mm512_loadu_ps(X + i)));
  NibbleRows<BlockScale> k{relaid.data(), w.cols, static_cast<const uint8_t*>(w.data), base, bs};
  if (n == 1 && tileRows) {  // rows in tiles, the rest one at a time
    size_t r = r0;
    for (; r + NibbleRows<BlockScale>::kTile <= r1; r += NibbleRows<BlockScale>::kTile) k.tile(r, Y + r);
    for (; r < r1; ++r) k.template row<1>(r, 0, Y + r);
    return;
  }
  runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace

void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  const size_t cols = w.cols;
  switch (w.format) {
    case WeightFormat::F32: {
      const float* d = static_cast<const float*>(w.data);
      return runDense(w, X, n, Y, r0, r1, [d, cols](size_t r, size_t i, __mmask16 m) {
        return _mm512_maskz_loadu_ps(m, d + r * cols + i);
      }, 4);
    }
    case WeightFormat::BF16: {
      const uint16_t* d = static_cast<const uint16_t*>(w.data);
      return runDense(w, X, n, Y, r0, r1, [d, cols](size_t r, size_t i, __mmask16 m) {
        __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, d + r * cols + i));
        return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
      }, 2);
    }
    case WeightFormat::I8Row: {
      const I8Load16 load16{static_cast<const int8_t*>(w.data), cols};
      const float* s = static_cast<const float*>(w.scales);
      if (n == 1) {
        const I8RowTiles k{{X, cols, load16, s, static_cast<const uint8_t*>(w.data), 1}};
        return runBlocked16<1>(k, 1, r0, r1, w.rows, Y);
      }
      return runDense(w, X, n, Y, r0, r1, load16, 1, s);
    }
    case WeightFormat::I4G64: {
      const float* s = static_cast<const float*>(w.scales);
      const size_t gpr = cols / kInt4Group;
      __m512 base = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
      return runNibbles(w, X, n, Y, r0, r1, base,
                        [s, gpr](size_t r, size_t b) { return s[r * gpr + b / 2]; }, false);
    }
    case WeightFormat::MXFP4: {
      const uint8_t* s = static_cast<const uint8_t*>(w.scales);
      const size_t gpr = cols / kMxfp4Group;
      __m512 base = _mm512_loadu_ps(kE2M1);
      return runNibbles(w, X, n, Y, r0, r1, base,
                        [s, gpr](size_t r, size_t b) { return ue8m0ToF32(s[r * gpr + b]); }, true);
    }
  }
}

}  // namespace k3::kernels::avx512
