// Internal: the AVX-512 IDOT kernels' loop nest (matmul_driver.h) for row
// kernels that hand back each vector's 16-lane accumulator instead of its
// sum. Sixteen rows' lanes are summed at once by a transpose-add (46
// shuffles and adds for 16 rows, where a row at a time costs 8 on a latency
// chain plus a scalar store); the routed experts' rows are one or two
// 16-group steps long, so that tail was a large part of a row. Both
// reductions add the same lanes in the same tree, (i, i+8), then (i, i+4),
// (i, i+2), (0, 1), so a row's bits do not depend on which one it went
// through (row ranges move with the thread schedule), and matmul == matvec
// bit for bit.
//
// Internal linkage, AVX-512 TUs only (see matmul_driver.h). Thread-safe:
// stateless templates; each call works in its own buffers.
#pragma once

#include <cstddef>

#include "k3/kernels/act_q8.h"
#include "k3/kernels/avx512_intrinsics.h"
#include "k3/kernels/group_transpose_avx512.h"
#include "k3/kernels/matmul_driver.h"

namespace k3::kernels::avx512 {
namespace {

// The lanes of a summed in the fixed tree above.
inline float rowSum16(__m512 a) {
  const __m512 p = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, 0xEE));  // lanes 0-7: a_i + a_(i+8)
  const __m512 q = _mm512_add_ps(p, _mm512_shuffle_f32x4(p, p, 0x01));  // lanes 0-3: p_i + p_(i+4)
  const __m512 r = _mm512_add_ps(q, _mm512_shuffle_ps(q, q, 0x0E));     // lanes 0-1: q_i + q_(i+2)
  return _mm512_cvtss_f32(_mm512_add_ps(r, _mm512_shuffle_ps(r, r, 0x01)));
}

// [rowSum16(a[0]), ..., rowSum16(a[15])], the same additions sixteen rows at
// a time (group_transpose_avx512.h's transposeReduce16).
inline __m512 rowSums16(const __m512* a) {
  return transposeReduce16(a, [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); });
}

// Column blocks, for kernels with kBlocksColumns. NV vectors' activations
// for a whole row are NV x steps x kStepActivationBytes: past L1 (72 KiB
// for 8 int8 vectors at K3's 7168 columns) every row pair re-read them from
// L2, which held the batched int8-row kernel at two thirds of its rate with
// the activations in L1 (quant_bench MatmulQ8Shape I8Row, 64 rows x 8
// vectors: 2048 columns 230, 7168 columns 150 G products/s). So a run of 16
// rows goes one block of columns at a time, all its row pairs over a block
// whose activations fit kL1ActivationBytes, and each (row, vector)
// accumulator carries over from block to block: the same FMAs in the same
// order as one pass over the row, so the same bits whatever the blocking.
constexpr size_t kL1ActivationBytes = 24 << 10;  // half of Zen 4/5's and Sapphire Rapids' L1D

struct ColumnBlocks {
  size_t steps;  // a row's column steps
  size_t block;  // steps per block (the last may be shorter)
  size_t count;
  size_t length(size_t b) const { return b * block + block <= steps ? block : steps - b * block; }
};

// One vector streams each row once, from DRAM: nothing to keep, one block.
template <int NV>
inline ColumnBlocks columnBlocksOf(size_t steps, size_t stepBytes) {
  if (NV == 1 || steps == 0) return {steps, steps, 1};
  const size_t fit = kL1ActivationBytes / (size_t(NV) * stepBytes);
  const size_t most = fit ? fit : 1;
  const size_t count = (steps + most - 1) / most;
  return {steps, (steps + count - 1) / count, count};
}

// Where a row pair's software prefetch points while it reads one block: the
// weights the stream of row pairs (block 0 of every pair in the run, then
// block 1, ..., then the next run of 16 rows) reads `ahead` steps later.
// At step t of the block it is rows (row0, row0 + 1) at step step0 + t for
// t < left0, then (row1, row1 + 1) at step t - left0 + step1. Unblocked,
// that is `ahead` steps on in the same rows, then the next pair's start.
struct PairAhead {
  size_t row0, step0, left0, row1, step1;
};

inline PairAhead pairAheadOf(const ColumnBlocks& cb, size_t r, size_t pairs, size_t pair, size_t block,
                             size_t ahead) {
  size_t p = pair, b = block, run = 0, t = ahead;  // counters, not divisions: once per pair and block
  const auto next = [&] {
    if (++p < pairs) return;
    p = 0;
    if (++b < cb.count) return;
    b = 0;
    ++run;
  };
  for (size_t len = cb.length(b); t >= len; len = cb.length(b)) t -= len, next();
  PairAhead a{r + kRowBlock * run + 2 * p, b * cb.block + t, cb.length(b) - t, 0, 0};
  next();
  a.row1 = r + kRowBlock * run + 2 * p;
  a.step1 = b * cb.block;
  return a;
}

// acc[j][i] of rows r..r+m-1 (m <= 16), block by block. Kernel provides
// kStepActivationBytes, kAheadSteps (how far its pairs prefetch), steps()
// and, accumulating into acc (started at zero by the caller) over steps
// [s0, s1):
//   template <int NV> void rowPair(size_t r, size_t v0, size_t s0, size_t s1,
//                                  __m512* acc0, __m512* acc1, const PairAhead&) const;
//   template <int NV> void row(size_t r, size_t v0, size_t s0, size_t s1, __m512* acc) const;
template <int NV, class Kernel>
inline void runColumnBlocks(const Kernel& k, size_t v0, size_t r, size_t m, __m512 (*acc)[kRowBlock]) {
  const ColumnBlocks cb = columnBlocksOf<NV>(k.steps(), Kernel::kStepActivationBytes);
  const size_t pairs = m / 2;
  for (size_t b = 0; b < cb.count; ++b) {
    const size_t s0 = b * cb.block, s1 = s0 + cb.length(b);
    for (size_t p = 0; p < pairs; ++p) {
      __m512 a[NV], c[NV];
      for (int j = 0; j < NV; ++j) a[j] = acc[j][2 * p], c[j] = acc[j][2 * p + 1];
      // One vector reads a row at a time and prefetches along it (no pair stream).
      const PairAhead ahead = NV == 1 ? PairAhead{} : pairAheadOf(cb, r, pairs, p, b, Kernel::kAheadSteps);
      k.template rowPair<NV>(r + 2 * p, v0, s0, s1, a, c, ahead);
      for (int j = 0; j < NV; ++j) acc[j][2 * p] = a[j], acc[j][2 * p + 1] = c[j];
    }
    if (m % 2) {
      __m512 a[NV];
      for (int j = 0; j < NV; ++j) a[j] = acc[j][m - 1];
      k.template row<NV>(r + m - 1, v0, s0, s1, a);
      for (int j = 0; j < NV; ++j) acc[j][m - 1] = a[j];
    }
  }
}

// Rows in runs of 16. Kernel must provide:
//   template <int NV> void row(size_t r, size_t v0, __m512* acc) const;
//     acc[j] = the 16-lane partial sums of row r for vector v0 + j, j < NV;
//   const float* rowScales;  // multiplies each finished row sum, or nullptr;
//   static constexpr bool kBlocksColumns: if true, rows go through
//     runColumnBlocks (its interface above) instead of row/rowPair here;
//   static constexpr bool kPacksRows, and if true
//   template <int NV> bool block16(size_t r, size_t v0, __m512 (*acc)[16]) const;
//     all of rows r..r+15 at once into acc[j][i] (row r + i), or false if it
//     cannot (the rows are then computed one at a time).
template <int NV, class Kernel>
inline void runVectorGroup16(const Kernel& k, size_t v0, size_t rb, size_t re, size_t rows, float* Y) {
  constexpr size_t kRows = 16;
  for (size_t r = rb; r < re; r += kRows) {
    const size_t m = re - r < kRows ? re - r : kRows;
    __m512 acc[NV][kRows];
    bool packed = false;
    if constexpr (Kernel::kPacksRows) packed = m == kRows && k.template block16<NV>(r, v0, acc);
    if constexpr (Kernel::kBlocksColumns) {
      for (int j = 0; j < NV; ++j)
        for (size_t i = 0; i < m; ++i) acc[j][i] = _mm512_setzero_ps();
      runColumnBlocks<NV>(k, v0, r, m, acc);
    } else if (!packed) {
      size_t i = 0;
      if constexpr (Kernel::kPairsRows)
        for (; i + 2 <= m; i += 2) {
          __m512 a[NV], b[NV];
          k.template rowPair<NV>(r + i, v0, a, b);
          for (int j = 0; j < NV; ++j) acc[j][i] = a[j], acc[j][i + 1] = b[j];
        }
      for (; i < m; ++i) {
        __m512 a[NV];
        k.template row<NV>(r + i, v0, a);
        for (int j = 0; j < NV; ++j) acc[j][i] = a[j];
      }
    }
    for (int j = 0; j < NV; ++j) {
      float* y = Y + (v0 + j) * rows + r;
      if (m == kRows) {
        __m512 s = rowSums16(acc[j]);
        if (k.rowScales) s = _mm512_mul_ps(_mm512_loadu_ps(k.rowScales + r), s);
        _mm512_storeu_ps(y, s);
      } else {
        for (size_t i = 0; i < m; ++i) {
          const float s = rowSum16(acc[j][i]);
          y[i] = k.rowScales ? k.rowScales[r + i] * s : s;
        }
      }
    }
  }
}

template <int NV, class Kernel>
inline void runRest16(const Kernel& k, size_t v, size_t rest, size_t rb, size_t re, size_t rows, float* Y) {
  if constexpr (NV >= 1) {
    if (rest == size_t(NV)) return runVectorGroup16<NV>(k, v, rb, re, rows, Y);
    runRest16<NV - 1>(k, v, rest, rb, re, rows, Y);
  }
}

template <int NVMAX, class Kernel>
inline void runBlocked16(const Kernel& k, size_t n, size_t r0, size_t r1, size_t rows, float* Y) {
  static_assert(NVMAX >= 1 && NVMAX <= 8);
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    const size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    size_t v = 0;
    for (; v + NVMAX <= n; v += NVMAX) runVectorGroup16<NVMAX>(k, v, rb, re, rows, Y);
    runRest16<NVMAX - 1>(k, v, n - v, rb, re, rows, Y);
  }
}

// An IDOT kernel's whole call: re-lays each of the n activation vectors once
// (relayout(xq, xs, groups, out), k.stride bytes each, on the stack up to
// StackBytes), points the kernel's X at them and runs rows [r0, r1).
template <int NVMAX, size_t StackBytes, class Kernel, class Relayout>
inline void runRelaid16(Kernel k, Relayout relayout, const int8_t* Xq, const float* Xs, size_t n,
                        size_t r0, size_t r1, size_t rows, float* Y) {
  if (n == 0 || r0 == r1) return;
  const size_t groups = k.cols / kQ8Group;
  RelaidActivations<StackBytes> relaid(n * k.stride);
  for (size_t v = 0; v < n; ++v) relayout(Xq + v * k.cols, Xs + v * groups, groups, relaid.data() + v * k.stride);
  k.X = relaid.data();
  runBlocked16<NVMAX>(k, n, r0, r1, rows, Y);
}

}  // namespace
}  // namespace k3::kernels::avx512
