// Internal: the loop nest every SIMD matmul shares. Rows outer in blocks of
// kRowBlock, vectors in groups of NV that share one decode of a weight row.
// A row kernel computes each vector's result with its own accumulators in an
// order that does not depend on NV, so matmul == per-vector matvec bit for bit.
//
// Everything here has internal linkage: this header is included by TUs built
// with different ISA flags, and shared inline symbols could let the linker pick
// an AVX-512 copy for a baseline caller.
// Inline code without shared state: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/io/stack_or_heap.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels {
namespace {

// The activations an IDOT kernel re-lays once per call: on the stack up to
// StackBytes (sized so every decode call fits: no allocation per token), else
// on the heap once per call (large prefill batches), left uninitialised:
// the re-layout writes every byte before a kernel reads it.
template <size_t StackBytes>
using RelaidActivations = StackOrHeap<int8_t, StackBytes>;

// Software prefetch distance along a row's weight bytes in the IDOT row
// kernels. One row at a time is one memory stream per core, which the
// hardware prefetcher alone kept at ~10 GB/s per core here; 2 KiB ahead
// measured +10-20 % from DRAM (quant_bench MatvecQ8, 1 and 2 threads;
// 512 B-4 KiB tried).
constexpr size_t kPrefetchAhead = 2048;
// One vector (decode) streams each matrix once from DRAM: its kernels
// prefetch non-temporally this far ahead (see act_q8_i8_avx512.cpp).
constexpr size_t kStreamAhead = 8192;
// A non-temporal prefetch of the line kStreamAhead bytes past p (prefetchnta).
inline void prefetchStream(const void* p) { __builtin_prefetch(static_cast<const char*>(p) + kStreamAhead, 0, 0); }
// For a one-vector kernel that reads tiles of rows at the same columns
// (tileBytes a tile): the offset to pass prefetchStream so that each row
// prefetches the same columns kStreamAhead or more on, a whole number of
// tiles, i.e. rows of the tiles to come. A row prefetching past its own end
// would land in its neighbour, which its own tile reads now.
constexpr size_t tileStreamOffset(size_t tileBytes) {
  return tileBytes * ((kStreamAhead + tileBytes - 1) / tileBytes) - kStreamAhead;
}

// Kernel must provide: template <int NV> void row(size_t r, size_t v0, float* out) const;
// computing out[j] = result of row r for vector v0 + j, j < NV.
template <int NV, class Kernel>
inline void runVectorGroup(const Kernel& k, size_t v0, size_t rb, size_t re, size_t rows,
                           float* Y) {
  float out[NV];
  for (size_t r = rb; r < re; ++r) {
    k.template row<NV>(r, v0, out);
    for (int j = 0; j < NV; ++j) Y[(v0 + j) * rows + r] = out[j];
  }
}

template <int NVMAX, class Kernel>
inline void runBlocked(const Kernel& k, size_t n, size_t r0, size_t r1, size_t rows, float* Y) {
  static_assert(NVMAX >= 1 && NVMAX <= 4);
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    size_t v = 0;
    for (; v + NVMAX <= n; v += NVMAX) runVectorGroup<NVMAX>(k, v, rb, re, rows, Y);
    switch (n - v) {
      case 3: if constexpr (NVMAX > 3) runVectorGroup<3>(k, v, rb, re, rows, Y); break;
      case 2: if constexpr (NVMAX > 2) runVectorGroup<2>(k, v, rb, re, rows, Y); break;
      case 1: if constexpr (NVMAX > 1) runVectorGroup<1>(k, v, rb, re, rows, Y); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace k3::kernels
