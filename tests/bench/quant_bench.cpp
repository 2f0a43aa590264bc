// Micro-benchmarks of the quant kernels in GB/s of weight bytes (data + scales)
// streamed from DRAM, next to a STREAM-style read baseline measured in the same
// binary. Matrices are 256 MiB of weights (far beyond L3) and 7168 columns (K3's
// hidden size). Run: build/<dir>/bin/quant_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <emmintrin.h>
#include <immintrin.h>
#include <malloc.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/kernels/act_q8.h"
#include "k3/kernels/cpu_features.h"
#include "k3/kernels/matvec.h"
#include "k3/io/thread_pool.h"
#include "k3/model/linear.h"

namespace {

// A prefill kernel's scratch past glibc's mmap threshold (128 KiB: the
// re-laid activations of 64 tokens) was mapped and zeroed on every call
// here, a quarter of a hot loop's time in clear_page, where k3-run's
// long-lived process reuses its heap (a 64-token prefill faults ~1000
// pages in all). So the benchmark keeps such blocks on its heap too.
const bool kHeapLikeTheRuntime = mallopt(M_MMAP_THRESHOLD, 16 << 20) && mallopt(M_TRIM_THRESHOLD, 64 << 20);

using namespace k3::codec;
using namespace k3::kernels;
namespace kernels = k3::kernels;

constexpr size_t kWeightBytes = size_t(256) << 20;
constexpr size_t kCols = 7168;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t[], FreeDeleter>;

// 2 MiB-aligned buffer in 2 MiB pages where the kernel has them, as the
// runtime maps its weights (io/mapped_file.cpp), so the streaming figures
// see the runtime's TLB behaviour. Touched once (first touch is
// very slow in this VM, so it must never happen inside a timed loop).
Buffer allocFilled(size_t bytes, uint8_t fill) {
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP the pages stay small
  std::memset(p, fill, bytes);
  return Buffer(static_cast<uint8_t*>(p));
}

// One shared pool reinterpreted per format: 0x3c bytes are normal floats for
// F32 (0.0115) and BF16, small int8s, and valid nibbles; scales get their own
// buffer (0x3c3c3c3c floats; ue8m0 bytes 0x7f = 2^0).
struct Pool {
  Buffer data = allocFilled(kWeightBytes, 0x3c);
  Buffer fscales = allocFilled(kWeightBytes / 8, 0x3c);
  Buffer ue8m0 = allocFilled(kWeightBytes / 8, 0x7f);
  std::vector<float> x = std::vector<float>(kCols * 64, 0.5f);  // up to 64 vectors of kCols
};
Pool& pool() {
  static Pool p;  // benchmark fixture data, built on first use
  return p;
}

size_t bytesPerWeightX2(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32: return 8;
    case WeightFormat::BF16: return 4;
    case WeightFormat::I8Row: return 2;
    default: return 1;
  }
}

// `bytes` of weights: kWeightBytes streams from DRAM, kHotBytes stays in L2
// (the kernel's compute ceiling).
constexpr size_t kHotBytes = size_t(256) << 10;
WeightView viewFor(WeightFormat f, size_t bytes) {
  Pool& p = pool();
  size_t rows = bytes * 2 / bytesPerWeightX2(f) / kCols;
  const void* scales = nullptr;
  if (f == WeightFormat::I8Row || f == WeightFormat::I4G64) scales = p.fscales.get();
  if (f == WeightFormat::MXFP4) scales = p.ue8m0.get();
  return WeightView{f, rows, kCols, p.data.get(), scales};
}

bool skipUnsupported(benchmark::State& state, kernels::Isa isa) {
  if (kernels::isaSupported(isa)) return false;
  state.SkipWithError("ISA not supported on this CPU");
  return true;
}

// Rows split evenly over the benchmark's threads (like the runtime's pool).
void rowShare(const benchmark::State& state, size_t rows, size_t& r0, size_t& r1) {
  size_t t = size_t(state.thread_index()), nt = size_t(state.threads());
  r0 = rows * t / nt;
  r1 = rows * (t + 1) / nt;
}

void BM_StreamRead(benchmark::State& state) {
  const auto* p = reinterpret_cast<const __m128i*>(pool().data.get());
  size_t n = kWeightBytes / 16, t = size_t(state.thread_index()), nt = size_t(state.threads());
  size_t b = n * t / nt, e = n * (t + 1) / nt;
  for (auto _ : state) {
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = b; i + 4 <= e; i += 4) {
      a0 = _mm_add_epi64(a0, _mm_load_si128(p + i));
      a1 = _mm_add_epi64(a1, _mm_load_si128(p + i + 1));
      a2 = _mm_add_epi64(a2, _mm_load_si128(p + i + 2));
      a3 = _mm_add_epi64(a3, _mm_load_si128(p + i + 3));
    }
    __m128i s = _mm_add_epi64(_mm_add_epi64(a0, a1), _mm_add_epi64(a2, a3));
    benchmark::DoNotOptimize(s);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t((e - b) * 16));
}
BENCHMARK(BM_StreamRead)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// The AVX2 integer-dot ALU ceiling: only vpmaddubsw (32 weight x activation
// products each) on register data, in 8 independent chains, with
// range(0) == 1 also the vpmaddwd widening and 32-bit add every IDOT kernel
// needs per 32 products (0: the int16 sums are just added). No loads, no
// decode, no scaling: no AVX2 IDOT matmul can exceed macs/s here, so the
// runtime's prefill ceiling is this figure / the products one token needs.
__attribute__((target("avx2"))) int32_t idotChains(size_t iters, bool widen) {
  __m256i a = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1), acc[8];
  __m256i b[8];
  for (int c = 0; c < 8; ++c) {
    acc[c] = _mm256_setzero_si256();
    b[c] = _mm256_set1_epi8(char(c + 1));
  }
  for (size_t i = 0; i < iters; ++i) {
    for (int c = 0; c < 8; ++c) {
      __m256i p = _mm256_maddubs_epi16(a, b[c]);
      acc[c] = widen ? _mm256_add_epi32(acc[c], _mm256_madd_epi16(p, ones)) : _mm256_add_epi16(acc[c], p);
    }
    __asm__ volatile("" : "+x"(a));  // keep the products inside the loop
  }
  __m256i s = acc[0];
  for (int c = 1; c < 8; ++c) s = _mm256_xor_si256(s, acc[c]);
  return _mm256_extract_epi32(s, 0);
}

void BM_IdotCeiling(benchmark::State& state) {
  if (skipUnsupported(state, kernels::Isa::Avx2)) return;
  constexpr size_t kIters = 1 << 16;
  const bool widen = state.range(0) != 0;
  for (auto _ : state) benchmark::DoNotOptimize(idotChains(kIters, widen));
  state.counters["macs/s"] = benchmark::Counter(double(state.iterations()) * double(kIters) * 8 * 32,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_IdotCeiling)->Arg(0)->Arg(1)->Threads(1)->Threads(2)->UseRealTime();

// The same for the AVX-512 VNNI kernels: only vpdpbusd on zmm registers (64
// products each, the multiply, widening and add in one instruction), in 8
// independent chains. No AVX-512 IDOT matmul can exceed macs/s here.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t vnniChains(size_t iters) {
  __m512i a = _mm512_set1_epi8(3), acc[8], b[8];
  for (int c = 0; c < 8; ++c) {
    acc[c] = _mm512_setzero_si512();
    b[c] = _mm512_set1_epi8(char(c + 1));
  }
  for (size_t i = 0; i < iters; ++i) {
    for (int c = 0; c < 8; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b[c]);
    __asm__ volatile("" : "+v"(a));  // keep the products inside the loop
  }
  __m512i s = acc[0];
  for (int c = 1; c < 8; ++c) s = _mm512_xor_si512(s, acc[c]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  return lanes[0];
}

void BM_IdotCeilingVnni(benchmark::State& state) {
  if (skipUnsupported(state, kernels::Isa::Avx512)) return;
  constexpr size_t kIters = 1 << 16;
  for (auto _ : state) benchmark::DoNotOptimize(vnniChains(kIters));
  state.counters["macs/s"] = benchmark::Counter(double(state.iterations()) * double(kIters) * 8 * 64,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_IdotCeilingVnni)->Threads(1)->Threads(2)->UseRealTime();

void BM_Matvec(benchmark::State& state, WeightFormat f, kernels::Isa isa, size_t bytes) {
  if (skipUnsupported(state, isa)) return;
  WeightView w = viewFor(f, bytes);
  size_t r0, r1;
  rowShare(state, w.rows, r0, r1);
  std::vector<float> y(w.rows);
  for (auto _ : state) {
    matvec(isa, w, pool().x.data(), y.data(), r0, r1);
    benchmark::DoNotOptimize(y.data());
  }
  double frac = double(r1 - r0) / double(w.rows);
  state.SetBytesProcessed(int64_t(double(state.iterations()) *
                                  double(weightDataBytes(w) + weightScaleBytes(w)) * frac));
}

// Prefill: n vectors per call; bytes are weight bytes (read once per call), so
// GB/s x n is the token-weight throughput.
void BM_Matmul(benchmark::State& state, WeightFormat f, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  WeightView w = viewFor(f, kWeightBytes / 8);  // compute-bound: keep iterations short
  const size_t n = size_t(state.range(0));
  std::vector<float> Y(n * w.rows);
  for (auto _ : state) {
    matmul(isa, w, pool().x.data(), n, Y.data(), 0, w.rows);
    benchmark::DoNotOptimize(Y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(weightDataBytes(w) + weightScaleBytes(w)));
  state.counters["tok_weights/s"] = benchmark::Counter(
      double(state.iterations()) * double(n) * double(w.rows * w.cols), benchmark::Counter::kIsRate);
}

void BM_MatvecQ8(benchmark::State& state, WeightFormat f, kernels::Isa isa, size_t bytes) {
  if (skipUnsupported(state, isa)) return;
  WeightView w = viewFor(f, bytes);
  size_t r0, r1;
  rowShare(state, w.rows, r0, r1);
  std::vector<int8_t> xq(kCols);
  std::vector<float> xs(kCols / 32), y(w.rows);
  quantizeActivationsQ8_32(pool().x.data(), kCols, xq.data(), xs.data());
  for (auto _ : state) {
    matvecQ8(isa, w, xq.data(), xs.data(), y.data(), r0, r1);
    benchmark::DoNotOptimize(y.data());
  }
  double frac = double(r1 - r0) / double(w.rows);
  state.SetBytesProcessed(int64_t(double(state.iterations()) *
                                  double(weightDataBytes(w) + weightScaleBytes(w)) * frac));
}

// Prefill through the IDOT path: n activation vectors per call.
void BM_MatmulQ8(benchmark::State& state, WeightFormat f, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  WeightView w = viewFor(f, kWeightBytes / 8);
  const size_t n = size_t(state.range(0));
  std::vector<int8_t> xq(n * kCols);
  std::vector<float> xs(n * kCols / 32), Y(n * w.rows);
  quantizeActivationsQ8_32(pool().x.data(), n * kCols, xq.data(), xs.data());
  for (auto _ : state) {
    matmulQ8(isa, w, xq.data(), xs.data(), n, Y.data(), 0, w.rows);
    benchmark::DoNotOptimize(Y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(weightDataBytes(w) + weightScaleBytes(w)));
  state.counters["tok_weights/s"] = benchmark::Counter(
      double(state.iterations()) * double(n) * double(w.rows * w.cols), benchmark::Counter::kIsRate);
}

// Batched decode (continuous batching: one row per conversation): n = 2-8
// vectors through 256 MiB of weights from DRAM, rows split over the
// threads. GB/s of weight bytes; the ideal is a plain read's rate.
void BM_MatmulQ8Stream(benchmark::State& state, WeightFormat f, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  WeightView w = viewFor(f, kWeightBytes);
  const size_t n = size_t(state.range(0));
  size_t r0, r1;
  rowShare(state, w.rows, r0, r1);
  std::vector<int8_t> xq(n * kCols);
  std::vector<float> xs(n * kCols / 32), Y(n * w.rows);
  quantizeActivationsQ8_32(pool().x.data(), n * kCols, xq.data(), xs.data());
  for (auto _ : state) {
    matmulQ8(isa, w, xq.data(), xs.data(), n, Y.data(), r0, r1);
    benchmark::DoNotOptimize(Y.data());
  }
  const double frac = double(r1 - r0) / double(w.rows);
  state.SetBytesProcessed(int64_t(double(state.iterations()) * double(weightDataBytes(w) + weightScaleBytes(w)) * frac));
}

// A `f` view of range(0) rows x range(1) columns and range(2) vectors.
struct Shape {
  WeightView w;
  size_t rows, cols, n;
};
Shape shapeOf(const benchmark::State& state, WeightFormat f) {
  Shape s{viewFor(f, 0), size_t(state.range(0)), size_t(state.range(1)), size_t(state.range(2))};
  s.w.rows = s.rows;
  s.w.cols = s.cols;
  return s;
}

// The same at the runtime's shapes (weights in L2, as in a prefill chunk):
// rows x cols x n vectors from the medium preset's dense projections (int8
// at --bits 8, int4-g64 at --bits 4: 768 x 768, 32-token chunk) and routed
// experts (MXFP4 w1/w3 512 x 384 and w2 384 x 512, 1-4 tokens each); for
// the AVX2 and the AVX-512 VNNI kernels; 64 rows of K3's expert w1 (3584
// columns) for 2-16 tokens: the MXFP4 kernels' compute ceiling at the
// bench preset's shapes, beside ExpertBatchK3Q8 (the same from DRAM); and
// 128 rows of K3's 7168-column int8 projections for a 16- and a 64-token
// prefill chunk (the dense prefill's compute ceiling).
void BM_MatmulQ8Shape(benchmark::State& state, WeightFormat f, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  const auto [w, rows, cols, n] = shapeOf(state, f);
  std::vector<int8_t> xq(n * cols);
  std::vector<float> xs(n * cols / 32), Y(n * rows);
  quantizeActivationsQ8_32(pool().x.data(), n * cols, xq.data(), xs.data());
  for (auto _ : state) {
    matmulQ8(isa, w, xq.data(), xs.data(), n, Y.data(), 0, rows);
    benchmark::DoNotOptimize(Y.data());
  }
  state.counters["tok_weights/s"] = benchmark::Counter(
      double(state.iterations()) * double(n) * double(rows * cols), benchmark::Counter::kIsRate);
}
#define K3_Q8_SHAPES(isa, name)                                                                  \
  BENCHMARK_CAPTURE(BM_MatmulQ8Shape, I8Row/name, WeightFormat::I8Row, isa)                       \
      ->Args({768, 768, 1})->Args({768, 768, 32})->Args({128, 7168, 16})->Args({128, 7168, 64})   \
      ->UseRealTime();                                                                            \
  BENCHMARK_CAPTURE(BM_MatmulQ8Shape, I4G64/name, WeightFormat::I4G64, isa)                       \
      ->Args({768, 768, 1})->Args({768, 768, 32})->UseRealTime();                                 \
  BENCHMARK_CAPTURE(BM_MatmulQ8Shape, MXFP4/name, WeightFormat::MXFP4, isa)                       \
      ->Args({512, 384, 1})->Args({512, 384, 2})->Args({512, 384, 3})->Args({512, 384, 4})        \
      ->Args({512, 384, 8})->Args({384, 512, 1})->Args({384, 512, 2})->Args({384, 512, 4})        \
      ->Args({384, 512, 8})->Args({64, 3584, 8})->Args({64, 3584, 4})->Args({64, 3584, 2})->Args({64, 3584, 16})->Args({64, 512, 8})->UseRealTime()
K3_Q8_SHAPES(kernels::Isa::Avx2, avx2);
K3_Q8_SHAPES(kernels::Isa::Avx512, avx512);
#undef K3_Q8_SHAPES

// Routed experts as prefill runs them: a different 512 x 384 MXFP4 matrix
// (the medium preset's w1 / w3) each call, n = 1-4 tokens, the matrices
// back to back through kWeightBytes (2,700 of them), so every call streams
// its weights from DRAM, as after the router picks a chunk's experts.
void BM_ExpertStreamQ8(benchmark::State& state, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  constexpr size_t kRows = 512, kExpertCols = 384;
  const size_t n = size_t(state.range(0));
  const size_t bytes = kRows * kExpertCols / 2, scaleBytes = kRows * kExpertCols / kMxfp4Group;
  const size_t count = kWeightBytes / bytes;
  std::vector<int8_t> xq(n * kExpertCols);
  std::vector<float> xs(n * kExpertCols / 32), Y(n * kRows);
  quantizeActivationsQ8_32(pool().x.data(), n * kExpertCols, xq.data(), xs.data());
  size_t e = 0;
  for (auto _ : state) {
    const WeightView w{WeightFormat::MXFP4, kRows, kExpertCols, pool().data.get() + e * bytes,
                       pool().ue8m0.get() + e * scaleBytes};
    matmulQ8(isa, w, xq.data(), xs.data(), n, Y.data(), 0, kRows);
    benchmark::DoNotOptimize(Y.data());
    e = e + 1 == count ? 0 : e + 1;
  }
  state.counters["tok_weights/s"] = benchmark::Counter(
      double(state.iterations()) * double(n) * double(kRows * kExpertCols), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_ExpertStreamQ8, MXFP4/avx512, kernels::Isa::Avx512)->Arg(1)->Arg(2)->Arg(4)->UseRealTime();

// K3's routed experts (the bench preset's shapes) back to back through the
// pool: w1 and w3 (3072 x 3584 MXFP4) then w2 (3584 x 3072). Each benchmark
// thread starts at its own share of them and walks on, as
// MoeLayer::runExperts hands out whole experts.
struct K3Experts {
  static constexpr size_t kInter = 3072, kLatent = 3584;
  static constexpr size_t kMatrixBytes = kInter * kLatent / 2, kMatrixScales = kInter * kLatent / kMxfp4Group;
  static constexpr size_t kCount = kWeightBytes / (3 * kMatrixBytes);
  static size_t first(const benchmark::State& state) {
    return size_t(state.thread_index()) * kCount / size_t(state.threads());
  }
  static size_t next(size_t e) { return e + 1 == kCount ? 0 : e + 1; }
  // Matrix m of expert e: 0 = w1, 1 = w3 (kInter x kLatent), 2 = w2 (kLatent x kInter).
  static WeightView view(size_t e, size_t m) {
    const size_t i = 3 * e + m;
    const size_t rows = m == 2 ? kLatent : kInter, cols = m == 2 ? kInter : kLatent;
    return WeightView{WeightFormat::MXFP4, rows, cols, pool().data.get() + i * kMatrixBytes,
                      pool().ue8m0.get() + i * kMatrixScales};
  }
  // Weight bytes (data + scales) one expert's three matrices read.
  static constexpr int64_t kBytesPerExpert = int64_t(3 * (kMatrixBytes + kMatrixScales));
};

// n tokens through each expert's w1 and w3, then w2, with int8 activations.
// GB/s of weight bytes beside StreamRead. (matvecQ8 is matmulQ8 with n = 1:
// the same kernels.)
void runExpertsK3Q8(benchmark::State& state, kernels::Isa isa, size_t n) {
  if (skipUnsupported(state, isa)) return;
  using E = K3Experts;
  std::vector<int8_t> xq(n * E::kLatent), hq(n * E::kInter);
  std::vector<float> xs(n * E::kLatent / 32), hs(n * E::kInter / 32), h1(n * E::kInter), h3(n * E::kInter),
      y(n * E::kLatent);
  quantizeActivationsQ8_32(pool().x.data(), n * E::kLatent, xq.data(), xs.data());
  quantizeActivationsQ8_32(pool().x.data(), n * E::kInter, hq.data(), hs.data());
  size_t e = E::first(state);
  for (auto _ : state) {
    matmulQ8(isa, E::view(e, 0), xq.data(), xs.data(), n, h1.data(), 0, E::kInter);
    matmulQ8(isa, E::view(e, 1), xq.data(), xs.data(), n, h3.data(), 0, E::kInter);
    matmulQ8(isa, E::view(e, 2), hq.data(), hs.data(), n, y.data(), 0, E::kLatent);
    benchmark::DoNotOptimize(y.data());
    e = E::next(e);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * E::kBytesPerExpert);
}

// Decode: one token per expert.
void BM_ExpertDecodeK3Q8(benchmark::State& state, kernels::Isa isa) { runExpertsK3Q8(state, isa, 1); }
BENCHMARK_CAPTURE(BM_ExpertDecodeK3Q8, MXFP4/avx2, kernels::Isa::Avx2)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_ExpertDecodeK3Q8, MXFP4/avx512, kernels::Isa::Avx512)->Threads(1)->Threads(2)->UseRealTime();

// The same decode with f32 activations (--activations f32): matvec, the
// 4-bit x f32 kernels, one token per expert.
void BM_ExpertDecodeK3(benchmark::State& state, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  using E = K3Experts;
  std::vector<float> h1(E::kInter), h3(E::kInter), y(E::kLatent);
  const float* x = pool().x.data();
  size_t e = E::first(state);
  for (auto _ : state) {
    matvec(isa, E::view(e, 0), x, h1.data(), 0, E::kInter);
    matvec(isa, E::view(e, 1), x, h3.data(), 0, E::kInter);
    matvec(isa, E::view(e, 2), x, y.data(), 0, E::kLatent);
    benchmark::DoNotOptimize(y.data());
    e = E::next(e);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * E::kBytesPerExpert);
}
BENCHMARK_CAPTURE(BM_ExpertDecodeK3, MXFP4/avx2, kernels::Isa::Avx2)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_ExpertDecodeK3, MXFP4/avx512, kernels::Isa::Avx512)->Threads(1)->Threads(2)->UseRealTime();

// range(0) tokens per expert: continuous batching's decode step, where 8
// conversations x top-16 of 64 experts give each picked expert about two
// rows (bench preset).
void BM_ExpertBatchK3Q8(benchmark::State& state, kernels::Isa isa) {
  runExpertsK3Q8(state, isa, size_t(state.range(0)));
}
BENCHMARK_CAPTURE(BM_ExpertBatchK3Q8, MXFP4/avx512, kernels::Isa::Avx512)
    ->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Threads(1)->Threads(2)->UseRealTime();

// The f32 path (matvec / matmul) at the medium preset's BF16 shapes, which
// stay BF16 in every container: the MoE router (608 x 768) and KDA's f_b
// (768 x 128), one vector (decode) and a 32-token chunk; weights in L2.
void BM_MatmulShape(benchmark::State& state, WeightFormat f, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  const auto [w, rows, cols, n] = shapeOf(state, f);
  std::vector<float> Y(n * rows);
  for (auto _ : state) {
    matmul(isa, w, pool().x.data(), n, Y.data(), 0, rows);
    benchmark::DoNotOptimize(Y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(weightDataBytes(w) + weightScaleBytes(w)));
  state.counters["tok_weights/s"] = benchmark::Counter(
      double(state.iterations()) * double(n) * double(rows * cols), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_MatmulShape, BF16/avx2, WeightFormat::BF16, kernels::Isa::Avx2)
    ->Args({608, 768, 1})->Args({768, 128, 1})->Args({608, 768, 32})->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulShape, BF16/avx512, WeightFormat::BF16, kernels::Isa::Avx512)
    ->Args({608, 768, 1})->Args({768, 128, 1})->Args({608, 768, 32})->UseRealTime();
// The f32 path's routed-expert prefill (the default --activations f32): 64
// rows of K3's expert w1 (3584 columns) for 16 tokens, and the same rows cut
// to 512 columns (its activations fit L1).
BENCHMARK_CAPTURE(BM_MatmulShape, MXFP4/avx2, WeightFormat::MXFP4, kernels::Isa::Avx2)
    ->Args({64, 3584, 16})->Args({64, 3584, 1})->Args({448, 512, 16})->UseRealTime();
BENCHMARK_CAPTURE(BM_MatmulShape, MXFP4/avx512, WeightFormat::MXFP4, kernels::Isa::Avx512)
    ->Args({64, 3584, 16})->Args({64, 3584, 1})->Args({448, 512, 16})->UseRealTime();

void BM_QuantizeInt8(benchmark::State& state, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  const size_t rows = (size_t(64) << 20) / 4 / kCols;  // 64 MiB of f32 input
  const float* w = reinterpret_cast<const float*>(pool().data.get());
  std::vector<int8_t> q(rows * kCols);
  std::vector<float> s(rows);
  for (auto _ : state) quantizeInt8Rows(isa, w, rows, kCols, q.data(), s.data());
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(rows * kCols * 4));
}

void BM_QuantizeInt4(benchmark::State& state, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  const size_t rows = (size_t(64) << 20) / 4 / kCols;
  const float* w = reinterpret_cast<const float*>(pool().data.get());
  std::vector<uint8_t> q(rows * kCols / 2);
  std::vector<float> s(rows * kCols / 64);
  for (auto _ : state) quantizeInt4G64(isa, w, rows, kCols, q.data(), s.data());
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(rows * kCols * 4));
}

void BM_Bf16ToF32(benchmark::State& state, kernels::Isa isa) {
  if (skipUnsupported(state, isa)) return;
  const size_t n = (size_t(32) << 20) / 2;
  const uint16_t* in = reinterpret_cast<const uint16_t*>(pool().data.get());
  std::vector<float> out(n);
  for (auto _ : state) bf16ToF32(isa, in, out.data(), n);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n * 2));
}

// The runtime's way through a matrix: k3::model::linear on a two-thread
// pool (guided takes of 16-row grains, one fork-join per call), in range(0)
// calls of equal parts of the 256 MiB, beside Matvec's two benchmark
// threads that each stream a fixed half. What a call costs: 30 calls of
// 8.5 MiB read ~10 % slower than one (48 vs 53 GB/s here); takes of half
// the remainder instead of a quarter, or of at least 4 grains, did not
// change that.
// Int8 rows only: a part's scales start at its first row's (one per row).
void BM_LinearPoolI8Row(benchmark::State& state) {
  static k3::ThreadPool tp(2);  // the benchmark's own pool, built on first use
  WeightView w = viewFor(WeightFormat::I8Row, kWeightBytes);
  const size_t parts = size_t(state.range(0));
  std::vector<WeightView> views(parts);
  for (size_t i = 0; i < parts; ++i) {
    views[i] = w;
    const size_t a = w.rows * i / parts, b = w.rows * (i + 1) / parts;
    views[i].rows = b - a;
    views[i].data = static_cast<const int8_t*>(w.data) + a * w.cols;
    views[i].scales = static_cast<const float*>(w.scales) + a;
  }
  std::vector<float> y(w.rows);
  for (auto _ : state) {
    for (size_t i = 0; i < parts; ++i) k3::model::linear(tp, views[i], pool().x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(weightDataBytes(w) + weightScaleBytes(w)));
}
BENCHMARK(BM_LinearPoolI8Row)->Arg(1)->Arg(3)->Arg(30)->UseRealTime()->Unit(benchmark::kMillisecond);

void registerAll() {
  const WeightFormat formats[] = {WeightFormat::F32, WeightFormat::BF16, WeightFormat::I8Row,
                                  WeightFormat::I4G64, WeightFormat::MXFP4};
  const kernels::Isa isas[] = {kernels::Isa::Scalar, kernels::Isa::Avx2, kernels::Isa::Avx512};
  for (kernels::Isa isa : isas) {
    for (WeightFormat f : formats) {
      std::string name = std::string("Matvec/") + weightFormatName(f) + "/" + kernels::isaName(isa);
      auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_Matvec, f, isa, kWeightBytes);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      if (isa != kernels::Isa::Scalar) b->Threads(1)->Threads(2);
      benchmark::RegisterBenchmark((name + "/hot").c_str(), BM_Matvec, f, isa, kHotBytes)
          ->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
    for (WeightFormat f : {WeightFormat::MXFP4, WeightFormat::I4G64, WeightFormat::I8Row}) {
      std::string q8 = std::string("MatvecQ8/") + weightFormatName(f) + "/" + kernels::isaName(isa);
      auto* b = benchmark::RegisterBenchmark(q8.c_str(), BM_MatvecQ8, f, isa, kWeightBytes);
      b->UseRealTime()->Unit(benchmark::kMillisecond);
      if (isa != kernels::Isa::Scalar) b->Threads(1)->Threads(2);
      benchmark::RegisterBenchmark((q8 + "/hot").c_str(), BM_MatvecQ8, f, isa, kHotBytes)
          ->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
  for (kernels::Isa isa : {kernels::Isa::Avx2, kernels::Isa::Avx512})
    for (WeightFormat f : {WeightFormat::BF16, WeightFormat::I8Row, WeightFormat::I4G64, WeightFormat::MXFP4}) {
      std::string name = std::string("Matmul/") + weightFormatName(f) + "/" + kernels::isaName(isa);
      benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, f, isa)
          ->Arg(1)->Arg(4)->Arg(16)->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  for (kernels::Isa isa : {kernels::Isa::Avx2, kernels::Isa::Avx512})
    for (WeightFormat f : {WeightFormat::MXFP4, WeightFormat::I4G64, WeightFormat::I8Row})
      benchmark::RegisterBenchmark((std::string("MatmulQ8/") + weightFormatName(f) + "/" + kernels::isaName(isa)).c_str(),
                                   BM_MatmulQ8, f, isa)
          ->Arg(1)->Arg(4)->Arg(16)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (kernels::Isa isa : {kernels::Isa::Avx2, kernels::Isa::Avx512})
    for (WeightFormat f : {WeightFormat::MXFP4, WeightFormat::I8Row})
      benchmark::RegisterBenchmark((std::string("MatmulQ8Stream/") + weightFormatName(f) + "/" + kernels::isaName(isa)).c_str(),
                                   BM_MatmulQ8Stream, f, isa)
          ->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Threads(1)->Threads(2)->UseRealTime()->Unit(benchmark::kMillisecond);
  for (kernels::Isa isa : {kernels::Isa::Scalar, kernels::Isa::Avx2}) {
    std::string s = kernels::isaName(isa);
    benchmark::RegisterBenchmark(("QuantizeInt8Rows/" + s).c_str(), BM_QuantizeInt8, isa)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("QuantizeInt4G64/" + s).c_str(), BM_QuantizeInt4, isa)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Bf16ToF32/" + s).c_str(), BM_Bf16ToF32, isa)
        ->UseRealTime()->Unit(benchmark::kMillisecond);
  }
}

const int kRegistered = (registerAll(), 0);

}  // namespace
