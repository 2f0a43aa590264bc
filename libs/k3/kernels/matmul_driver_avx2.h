// Internal: the AVX2 IDOT kernels' loop nest (matmul_driver.h) for row
// kernels that hand back each vector's 8-lane accumulator instead of its sum.
// With RowsAtOnce = 8 the driver sums eight rows' lanes at once with a
// transpose-add (22 shuffles and adds and one store, where a row at a time
// costs 7 operations on a latency chain and a scalar store per row). perf put
// about a quarter of the MXFP4 kernel's decode samples on that per-row tail
// (12- and 16-group expert rows); quant_bench MatmulQ8Shape at the medium
// preset's shapes: MXFP4 +6-17 % at 1-4 vectors, int8 768 x 768 +17 % at one
// vector. Both reductions add the lanes in the same pairs and order,
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), so a row's bits do not depend on
// which one it went through (row ranges move with the thread schedule), and
// matmul == matvec bit for bit.
//
// Internal linkage, AVX2 TUs only (see matmul_driver.h). Thread-safe:
// stateless templates; each call works in its own buffers.
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "k3/kernels/matmul_driver.h"
#include "k3/kernels/row_sums_avx2.h"

namespace k3::kernels {
namespace {

// Rows in runs of RowsAtOnce (8, or 1: one at a time). Kernel must provide:
//   template <int NV> void row(size_t r, size_t v0, __m256* acc) const;
//     acc[j] = the 8-lane partial sums of row r for vector v0 + j, j < NV;
//   const float* rowScales;  // multiplies each finished row sum, or nullptr.
template <int NV, size_t RowsAtOnce, class Kernel>
inline void runVectorGroup8(const Kernel& k, size_t v0, size_t rb, size_t re, size_t rows, float* Y) {
  // One call site for row(), so the compiler inlines it and hoists its setup.
  for (size_t r = rb; r < re; r += RowsAtOnce) {
    const size_t m = re - r < RowsAtOnce ? re - r : RowsAtOnce;
    __m256 acc[NV][8];
    for (size_t i = 0; i < m; ++i) {
      __m256 a[NV];
      k.template row<NV>(r + i, v0, a);
      for (int j = 0; j < NV; ++j) acc[j][i] = a[j];
    }
    for (int j = 0; j < NV; ++j) {
      float* y = Y + (v0 + j) * rows + r;
      if (m == 8) {
        __m256 s = rowSums8(acc[j]);
        if (k.rowScales) s = _mm256_mul_ps(_mm256_loadu_ps(k.rowScales + r), s);
        _mm256_storeu_ps(y, s);
      } else {
        for (size_t i = 0; i < m; ++i) {
          const float s = rowSum(acc[j][i]);
          y[i] = k.rowScales ? k.rowScales[r + i] * s : s;
        }
      }
    }
  }
}

template <int NVMAX, size_t RowsAtOnce = 8, class Kernel>
inline void runBlocked8(const Kernel& k, size_t n, size_t r0, size_t r1, size_t rows, float* Y) {
  static_assert(NVMAX >= 1 && NVMAX <= 4);
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    size_t v = 0;
    for (; v + NVMAX <= n; v += NVMAX) runVectorGroup8<NVMAX, RowsAtOnce>(k, v, rb, re, rows, Y);
    switch (n - v) {
      case 3: if constexpr (NVMAX > 3) runVectorGroup8<3, RowsAtOnce>(k, v, rb, re, rows, Y); break;
      case 2: if constexpr (NVMAX > 2) runVectorGroup8<2, RowsAtOnce>(k, v, rb, re, rows, Y); break;
      case 1: if constexpr (NVMAX > 1) runVectorGroup8<1, RowsAtOnce>(k, v, rb, re, rows, Y); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace k3::kernels
