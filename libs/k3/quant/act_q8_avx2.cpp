// AVX2 IDOT kernel: MXFP4 or int4-g64 weights x int8 activations.
//
// The activations are first copied into the order the packed weights come in
// (once per call, not per row), so decoding a weight byte needs no shuffles:
// low nibbles are the even columns, high nibbles the odd ones. Per 4 groups
// (128 columns, 64 weight bytes) the activation block is
//   [even(g0) even(g1) odd(g0) odd(g1) | even(g2) even(g3) odd(g2) odd(g3)]
// (16 bytes each); groups left over after the last multiple of 4 are stored
// one by one as [even(g) odd(g)].
//
// In the 4-group blocks a byte table gives u = w2 + 12 (w2 = doubled e2m1
// value; u in [0, 24] is unsigned, as maddubs needs; for int4 u is the nibble
// itself, v + 8) and maddubs(u, xq) gives exact int16 pair sums (<= 6096).
// Adding the even and odd halves (<= 12192: still exact), two madds and a
// 32-bit hadd fold 4 groups into one int32 vector [g0 g0 g2 g2 | g1 g1 g3 g3]; subtracting the same fold of 12*xq (8*xq
// for int4; computed once per call with the re-layout) leaves the exact sums
// of w2*xq, and one convert + FMA applies the four factors 2^(s-127)*0.5*xs
// (int4: s[g/2]*xs). Leftover groups use maddubs(|w2|, sign(xq, w2)) instead.
#include <immintrin.h>

#include <vector>

#include "k3/quant/act_q8.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/matmul_driver.h"
#include "k3/quant/mxfp4.h"

namespace k3::quant::avx2 {

namespace {

constexpr int kVecGroup = 4;                 // vectors sharing one decode (a few spills)
constexpr size_t kAhead = 2048;  // software prefetch distance along a row's weight bytes (see I8 kernel)
constexpr size_t kStackActBytes = 32 << 10;  // re-laid activations up to this size live on the stack

inline __m256i offsetLut() {  // doubled e2m1 + 12
  return _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
                          12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

inline __m256i doubledLut() {
  return _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                          0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

// What differs between the two 4-bit formats (everything else is shared).
struct Mxfp4Format {
  static constexpr int kOffset = 12;  // offset table = doubled e2m1 + 12
  static __m256i offsetTable() { return offsetLut(); }
  static __m256i signedTable() { return doubledLut(); }
  const uint8_t* scales;  // ue8m0 [rows, groups]
  size_t groups;
  // 2^(s-127) * 0.5 for groups g..g+3 of row r.
  __m128 factors4(size_t r, size_t g) const {
    int32_t s4;
    __builtin_memcpy(&s4, scales + r * groups + g, 4);
    __m128 sw = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(s4)), 23));
    return _mm_mul_ps(sw, _mm_set1_ps(0.5f));
  }
  float factor1(size_t r, size_t g) const { return ue8m0ToF32(scales[r * groups + g]) * 0.5f; }
};

struct Int4Format {
  static constexpr int kOffset = 8;  // offset table = nibble itself (v + 8)
  static __m256i offsetTable() {
    return _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
  static __m256i signedTable() {
    return _mm256_setr_epi8(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7,
                            -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
  }
  const float* scales;  // f32 [rows, groups / 2], one per 64 columns
  size_t groups;        // 32-column groups
  __m128 factors4(size_t r, size_t g) const {
    const float* s = scales + r * (groups / 2) + g / 2;
    return _mm_setr_ps(s[0], s[0], s[1], s[1]);
  }
  float factor1(size_t r, size_t g) const { return scales[r * (groups / 2) + g / 2]; }
};

// 32 natural-order bytes of one group -> [even cols (16) | odd cols (16)].
inline __m256i splitEvenOdd(const int8_t* x) {
  const __m256i evenOdd = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)), evenOdd);
  return _mm256_permute4x64_epi64(v, 0xd8);
}

// The 4-group fold used by the kernel: 4 x 16 int16 -> [g0 g0 g2 g2 | g1 g1 g3 g3].
// q0/q1 hold the even/odd pair sums of g0 (low lane) and g1 (high lane),
// q2/q3 those of g2/g3; |pair sum| <= 6096, so even+odd (<= 12192) still fits
// int16. Two adds, two madds and one 32-bit hadd: 3 uops fewer than folding
// with three 16-bit hadds, in the loop that bounds prefill.
inline __m256i fold4(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i m01 = _mm256_madd_epi16(_mm256_add_epi16(q0, q1), ones);  // [g0 x4 | g1 x4]
  const __m256i m23 = _mm256_madd_epi16(_mm256_add_epi16(q2, q3), ones);  // [g2 x4 | g3 x4]
  return _mm256_hadd_epi32(m01, m23);
}

// Bytes of one re-laid activation vector: xq in kernel order, then per 4-group
// block the fold of offset*xq (8 int32).
inline size_t relaidBytes(size_t groups) { return 32 * groups + 32 * (groups / 4); }

// One activation vector (groups * 32 bytes) into the kernel order above.
void relayout(const int8_t* x, size_t groups, int offset, int8_t* out) {
  const size_t blocks = groups / 4;
  int8_t* corr = out + 32 * groups;
  const __m256i off = _mm256_set1_epi8(char(offset));
  for (size_t b = 0; b < blocks; ++b) {
    __m256i q[4];
    for (int h = 0; h < 2; ++h) {
      const size_t g = 4 * b + 2 * h;
      __m256i e = splitEvenOdd(x + 32 * g), o = splitEvenOdd(x + 32 * g + 32);
      __m256i lo = _mm256_permute2x128_si256(e, o, 0x20), hi = _mm256_permute2x128_si256(e, o, 0x31);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g + 32), hi);
      q[2 * h] = _mm256_maddubs_epi16(off, lo);
      q[2 * h + 1] = _mm256_maddubs_epi16(off, hi);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + 32 * b), fold4(q[0], q[1], q[2], q[3]));
  }
  for (size_t g = 4 * blocks; g < groups; ++g)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), splitEvenOdd(x + 32 * g));
}

template <class Format>
struct Q8Rows {
  const int8_t* Xq;  // re-laid activations, [n, relaidBytes(groups)]
  const float* Xs;
  size_t cols;
  size_t stride;  // relaidBytes(groups)
  const uint8_t* data;
  Format fmt;

  template <int NV>
  void row(size_t r, size_t v0, float* out) const {
    const size_t groups = cols / kMxfp4Group;
    const int8_t* xq[NV];
    const float* xs[NV];
    __m256 acc[NV], accTail[NV];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * stride;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j] = accTail[j] = _mm256_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const __m256i ulut = Format::offsetTable();
    const __m256i lut = Format::signedTable(), nib = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
    const __m256i factorOrder = _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3);
    size_t g = 0;
    for (; g + 4 <= groups; g += 4) {
      _mm_prefetch(reinterpret_cast<const char*>(p + 16 * g + kAhead), _MM_HINT_T0);
      // u[0]/u[1]: even/odd columns of g0 (low lane) and g1 (high lane); u[2]/u[3]: g2, g3.
      __m256i u[4];
      for (int h = 0; h < 2; ++h) {
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 * g + 32 * h));
        u[2 * h] = _mm256_shuffle_epi8(ulut, _mm256_and_si256(b, nib));
        u[2 * h + 1] = _mm256_shuffle_epi8(ulut, _mm256_and_si256(_mm256_srli_epi16(b, 4), nib));
      }
      const __m128 sw = fmt.factors4(r, g);  // weight-side factors of g0..g3
      for (int j = 0; j < NV; ++j) {
        const int8_t* x = xq[j] + 32 * g;
        __m256i q[4];
        for (int k = 0; k < 4; ++k)
          q[k] = _mm256_maddubs_epi16(u[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * k)));
        __m256i corr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + 32 * groups + 8 * g));
        __m256i di = _mm256_sub_epi32(fold4(q[0], q[1], q[2], q[3]), corr);
        __m256 d = _mm256_cvtepi32_ps(di);  // [g0 g0 g2 g2 | g1 g1 g3 g3]
        __m128 c = _mm_mul_ps(sw, _mm_loadu_ps(xs[j] + g));
        __m256 c8 = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(c), factorOrder);
        acc[j] = _mm256_fmadd_ps(d, c8, acc[j]);
      }
    }
    for (; g < groups; ++g) {
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g));
      __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
      __m256i w = _mm256_shuffle_epi8(lut, _mm256_and_si256(both, nib));  // [even | odd]
      __m256i a = _mm256_abs_epi8(w);
      const float sw = fmt.factor1(r, g);
      for (int j = 0; j < NV; ++j) {
        __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + 32 * g));
        __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(xv, w)), ones);
        accTail[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(sw * xs[j][g]), accTail[j]);
      }
    }
    for (int j = 0; j < NV; ++j) {
      __m256 t = _mm256_add_ps(acc[j], accTail[j]);
      __m128 q = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
      q = _mm_add_ps(q, _mm_movehl_ps(q, q));
      q = _mm_add_ss(q, _mm_movehdup_ps(q));
      out[j] = _mm_cvtss_f32(q);
    }
  }
};

template <class Format>
void runQ8(const WeightView& w, const Format& fmt, const int8_t* Xq, const float* Xs, size_t n,
           float* Y, size_t r0, size_t r1) {
  const size_t cols = w.cols, groups = cols / kQ8Group, stride = relaidBytes(groups);
  if (n == 0 || r0 == r1) return;
  // Decode (n == 1) never allocates; a large prefill batch uses the heap once.
  alignas(32) int8_t stackBuf[kStackActBytes];
  std::vector<int8_t> heapBuf;
  int8_t* buf = stackBuf;
  if (n * stride > kStackActBytes) {
    heapBuf.resize(n * stride);
    buf = heapBuf.data();
  }
  for (size_t v = 0; v < n; ++v) relayout(Xq + v * cols, groups, Format::kOffset, buf + v * stride);
  Q8Rows<Format> k{buf, Xs, cols, stride, static_cast<const uint8_t*>(w.data), fmt};
  runBlocked<kVecGroup>(k, n, r0, r1, w.rows, Y);
}

}  // namespace

void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1) {
  const size_t groups = w.cols / kQ8Group;
  if (w.format == WeightFormat::I4G64)
    return runQ8(w, Int4Format{static_cast<const float*>(w.scales), groups}, Xq, Xs, n, Y, r0, r1);
  runQ8(w, Mxfp4Format{static_cast<const uint8_t*>(w.scales), groups}, Xq, Xs, n, Y, r0, r1);
}

}  // namespace k3::quant::avx2
