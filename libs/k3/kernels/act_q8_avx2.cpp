// AVX2 IDOT kernel: MXFP4 or int4-g64 weights x int8 activations.
//
// The activations are first copied into the order the packed weights come in
// (once per call, not per row), so decoding a weight byte needs no shuffles:
// low nibbles are the even columns, high nibbles the odd ones. Per pair of
// groups the activations are [even(g) even(g+1)] [odd(g) odd(g+1)] (16 bytes
// each), matching one 32-byte load of the two groups' weight bytes; groups
// left after the last multiple of 4 are stored one by one as [even(g) odd(g)].
//
// A byte table gives u = w2 + 12 (w2 = doubled e2m1 value; u in [0, 24] is
// unsigned, as maddubs needs; for int4 u is the nibble itself, v + 8) and
// maddubs(u, xq) gives exact int16 pair sums (<= 6096). Rows are walked in
// blocks of 8 groups (256 columns): even + odd pair sums (<= 12192, still
// exact), one madd per 2 groups and a 4x4 transpose-add per lane give the
// eight whole group sums [g0 g2 g4 g6 | g1 g3 g5 g7]; subtracting the same
// fold of 12*xq (8*xq for int4; computed with the re-layout) leaves the exact
// sums of w2*xq, and one convert, one multiply (weight factors x activation
// scales, the latter pre-laid in that lane order) and one FMA apply the eight
// factors 2^(s-127)*0.5*xs (int4: s[g/2]*xs). A row's last 4 groups, if any,
// are a half block with its upper lanes 0; single groups after that use
// maddubs(|w2|, sign(xq, w2)). Everything adds into one accumulator per
// vector, whose lanes the driver sums (matmul_driver_avx2.h): the same
// operations for every vector, so matmul == matvec bit for bit.
//
// Against 4-group blocks (two per 8 groups, each with its own convert,
// multiply, permute and FMA, and a hadd fold) this measured matvec +7-21 %
// (quant_bench MatvecQ8 MXFP4 hot), int4 +10-40 %, MXFP4 matmul at the
// medium preset's shapes within noise.
// Thread-safe: no shared mutable state.
#include <immintrin.h>

#include "k3/codec/mxfp4.h"
#include "k3/kernels/act_q8.h"
#include "k3/kernels/matmul_driver_avx2.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels::avx2 {

namespace {

constexpr int kVecGroup = 4;                 // vectors sharing one decode (a few spills)
// Re-laid activations up to this size live on the stack: 40 bytes per 32
// columns, so a decode step never allocates, even at K3's widest input
// (33792 columns: 41 KiB).
constexpr size_t kStackActBytes = 48 << 10;

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
  static constexpr size_t kRowsAtOnce = 8;  // rows summed 8 at a time (matmul_driver_avx2.h)
  static __m256i offsetTable() { return offsetLut(); }
  static __m256i signedTable() { return doubledLut(); }
  const uint8_t* scales;  // ue8m0 [rows, groups]
  size_t groups;
  // The same for groups g..g+7 in the 8-block lane order [g0 g2 g4 g6 | g1 g3 g5 g7].
  __m256 factors8(size_t r, size_t g) const {
    int64_t s8;
    __builtin_memcpy(&s8, scales + r * groups + g, 8);
    const __m128i order = _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, -1, -1, -1, -1, -1, -1, -1, -1);
    __m128i b = _mm_shuffle_epi8(_mm_cvtsi64_si128(s8), order);
    __m256 sw = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu8_epi32(b), 23));
    return _mm256_mul_ps(sw, _mm256_set1_ps(0.5f));
  }
  // Groups g..g+3 only (a row's last 4-group block): [g0 g2 0 0 | g1 g3 0 0].
  __m256 factors8Half(size_t r, size_t g) const {
    int32_t s4;
    __builtin_memcpy(&s4, scales + r * groups + g, 4);
    const __m128i order = _mm_setr_epi8(0, 2, -1, -1, 1, 3, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    __m128i b = _mm_shuffle_epi8(_mm_cvtsi32_si128(s4), order);
    __m256 sw = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu8_epi32(b), 23));
    return _mm256_mul_ps(sw, _mm256_set1_ps(0.5f));
  }
  float factor1(size_t r, size_t g) const { return ue8m0ToF32(scales[r * groups + g]) * 0.5f; }
};

struct Int4Format {
  static constexpr int kOffset = 8;  // offset table = nibble itself (v + 8)
  // Rows summed one at a time: eight at once measured -7 to -11 % on long
  // rows (quant_bench MatvecQ8 I4G64 hot, 7168 columns) and +1 to +6 % at
  // 768 columns (MatmulQ8Shape I4G64); the real model's rows are long.
  static constexpr size_t kRowsAtOnce = 1;
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
  // Groups g..g+7 (g % 8 == 0) share s[g/2..g/2+3]: [s0 s1 s2 s3 | s0 s1 s2 s3] in 8-block order.
  __m256 factors8(size_t r, size_t g) const {
    return _mm256_broadcast_ps(reinterpret_cast<const __m128*>(scales + r * (groups / 2) + g / 2));
  }
  // Groups g..g+3 only: [s0 s1 0 0 | s0 s1 0 0].
  __m256 factors8Half(size_t r, size_t g) const {
    __m128 s2 = _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + r * (groups / 2) + g / 2)));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(s2), s2, 1);
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

// 8 groups (q0..q7: the even/odd pair sums of g0|g1, g2|g3, g4|g5, g6|g7) ->
// the whole group sums [g0 g2 g4 g6 | g1 g3 g5 g7]: even + odd pair sums
// (|pair| <= 6096, so the sum still fits int16), madd to 4 int32 partials
// per group, then per lane a 4x4 transpose-add (single-uop unpacks and adds).
inline __m256i fold8(const __m256i* q) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i m[4];  // m[k] = [g(2k) x4 | g(2k+1) x4] partial sums
  for (int k = 0; k < 4; ++k) m[k] = _mm256_madd_epi16(_mm256_add_epi16(q[2 * k], q[2 * k + 1]), ones);
  __m256i s0 = _mm256_add_epi32(_mm256_unpacklo_epi32(m[0], m[1]), _mm256_unpackhi_epi32(m[0], m[1]));
  __m256i s1 = _mm256_add_epi32(_mm256_unpacklo_epi32(m[2], m[3]), _mm256_unpackhi_epi32(m[2], m[3]));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s0, s1), _mm256_unpackhi_epi64(s0, s1));
}

// Layout of one re-laid activation vector: xq in kernel order (32 bytes per
// group), then per block the fold8 of offset*xq (8 int32), then per block
// the activation scales in fold8 lane order (8 floats). Blocks are 8 groups,
// and a row's last 4 groups, if any, make a half block (its upper lanes 0).
struct Relaid {
  size_t blocks8, halves;  // halves: 0 or 1
  explicit Relaid(size_t groups) : blocks8(groups / 8), halves(groups % 8 / 4) {}
  size_t blocks() const { return blocks8 + halves; }
  static size_t corrOffset(size_t groups) { return 32 * groups; }
  size_t scaleOffset(size_t groups) const { return 32 * groups + 32 * blocks(); }
  size_t bytes(size_t groups) const { return scaleOffset(groups) + 32 * blocks(); }
};

// Groups g, g+1 of x in kernel order: [even(g) even(g+1)] and [odd(g) odd(g+1)]
// at out + 32g (the weight bytes of g and g+1 load as one 256-bit vector),
// and their offset maddubs into q[0], q[1].
inline void relayPair(const int8_t* x, size_t g, __m256i off, int8_t* out, __m256i* q) {
  __m256i e = splitEvenOdd(x + 32 * g), o = splitEvenOdd(x + 32 * g + 32);
  __m256i lo = _mm256_permute2x128_si256(e, o, 0x20), hi = _mm256_permute2x128_si256(e, o, 0x31);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), lo);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g + 32), hi);
  q[0] = _mm256_maddubs_epi16(off, lo);
  q[1] = _mm256_maddubs_epi16(off, hi);
}

// One activation vector (groups * 32 bytes, groups scales) into the layout above.
void relayout(const int8_t* x, const float* xs, size_t groups, int offset, int8_t* out) {
  const Relaid lay(groups);
  int8_t* corr = out + Relaid::corrOffset(groups);
  float* xs8 = reinterpret_cast<float*>(out + lay.scaleOffset(groups));
  const __m256i off = _mm256_set1_epi8(char(offset));
  const __m256i scaleOrder = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  size_t g = 0;
  for (size_t b = 0; b < lay.blocks(); ++b, g += 8) {
    const int pairs = b < lay.blocks8 ? 4 : 2;
    __m256i q[8];
    for (int h = 0; h < 4; ++h) {
      if (h < pairs) {
        relayPair(x, g + 2 * h, off, out, q + 2 * h);
      } else {
        q[2 * h] = q[2 * h + 1] = _mm256_setzero_si256();
      }
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(corr + 32 * b), fold8(q));
    const __m256 s = pairs == 4 ? _mm256_loadu_ps(xs + g)
                                : _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(xs + g), 0);
    _mm256_storeu_ps(xs8 + 8 * b, _mm256_permutevar8x32_ps(s, scaleOrder));
  }
  g = 8 * lay.blocks8 + 4 * lay.halves;
  for (; g < groups; ++g)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * g), splitEvenOdd(x + 32 * g));
}

template <class Format>
struct Q8Rows {
  const int8_t* Xq;  // re-laid activations, [n, stride]
  const float* Xs;
  size_t cols;
  size_t stride;  // Relaid::bytes(groups)
  const uint8_t* data;
  Format fmt;

  const float* rowScales = nullptr;  // none: the factors are per group

  template <int NV>
  void row(size_t r, size_t v0, __m256* out) const {
    const size_t groups = cols / kMxfp4Group;
    const Relaid lay(groups);
    const int8_t* xq[NV];
    const float* xs[NV];
    __m256 acc[NV];
    for (int j = 0; j < NV; ++j) {
      xq[j] = Xq + (v0 + j) * stride;
      xs[j] = Xs + (v0 + j) * groups;
      acc[j] = _mm256_setzero_ps();
    }
    const uint8_t* p = data + r * cols / 2;
    const __m256i ulut = Format::offsetTable(), nib = _mm256_set1_epi8(0x0f);
    // 2 * pairs groups' weight bytes (16 per group) from p + 16g into u: per
    // pair, the even then the odd columns of (g | g+1).
    auto decode = [&](size_t g, int pairs, __m256i* u) {
      for (int h = 0; h < pairs; ++h) {
        __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16 * g + 32 * h));
        u[2 * h] = _mm256_shuffle_epi8(ulut, _mm256_and_si256(b, nib));
        u[2 * h + 1] = _mm256_shuffle_epi8(ulut, _mm256_and_si256(_mm256_srli_epi16(b, 4), nib));
      }
    };
    auto dots = [](const int8_t* x, const __m256i* u, int k, __m256i* q) {
      for (int i = 0; i < k; ++i)
        q[i] = _mm256_maddubs_epi16(u[i], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * i)));
    };
    const size_t corr0 = Relaid::corrOffset(groups), scale0 = lay.scaleOffset(groups);
    // One block: 8 groups, or the row's last 4 (half) with the upper lanes 0.
    auto block = [&](size_t b, size_t g, bool half, const __m256 sw) {
      __m256i u[8];
      decode(g, half ? 2 : 4, u);
      for (int j = 0; j < NV; ++j) {
        __m256i q[8];
        dots(xq[j] + 32 * g, u, half ? 4 : 8, q);
        if (half) q[4] = q[5] = q[6] = q[7] = _mm256_setzero_si256();
        __m256i corr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + corr0 + 32 * b));
        __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(fold8(q), corr));
        const float* xs8 = reinterpret_cast<const float*>(xq[j] + scale0) + 8 * b;
        acc[j] = _mm256_fmadd_ps(d, _mm256_mul_ps(sw, _mm256_loadu_ps(xs8)), acc[j]);
      }
    };
    size_t g = 0;
    for (size_t b = 0; b < lay.blocks8; ++b, g += 8) {
      if constexpr (NV == 1) {  // one vector (decode): non-temporal, further ahead (matmul_driver.h)
        prefetchStream(p + 16 * g);
        prefetchStream(p + 16 * g + 64);
      } else {
        _mm_prefetch(reinterpret_cast<const char*>(p + 16 * g + kPrefetchAhead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + 16 * g + 64 + kPrefetchAhead), _MM_HINT_T0);
      }
      block(b, g, false, fmt.factors8(r, g));  // weight-side factors, fold8 lane order
    }
    if (lay.halves) {
      block(lay.blocks8, g, true, fmt.factors8Half(r, g));
      g += 4;
    }
    const __m256i lut = Format::signedTable(), ones = _mm256_set1_epi16(1);
    for (; g < groups; ++g) {
      __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g));
      __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(b), _mm_srli_epi16(b, 4), 1);
      __m256i w = _mm256_shuffle_epi8(lut, _mm256_and_si256(both, nib));  // [even | odd]
      __m256i a = _mm256_abs_epi8(w);
      const float sw = fmt.factor1(r, g);
      for (int j = 0; j < NV; ++j) {
        __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + 32 * g));
        __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(xv, w)), ones);
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d), _mm256_set1_ps(sw * xs[j][g]), acc[j]);
      }
    }
    for (int j = 0; j < NV; ++j) out[j] = acc[j];
  }
};

template <class Format>
void runQ8(const WeightView& w, const Format& fmt, const int8_t* Xq, const float* Xs, size_t n,
           float* Y, size_t r0, size_t r1) {
  const size_t cols = w.cols, groups = cols / kQ8Group, stride = Relaid(groups).bytes(groups);
  if (n == 0 || r0 == r1) return;
  RelaidActivations<kStackActBytes> relaid(n * stride);
  int8_t* buf = relaid.data();
  for (size_t v = 0; v < n; ++v) relayout(Xq + v * cols, Xs + v * groups, groups, Format::kOffset, buf + v * stride);
  Q8Rows<Format> k{buf, Xs, cols, stride, static_cast<const uint8_t*>(w.data), fmt};
  runBlocked8<kVecGroup, Format::kRowsAtOnce>(k, n, r0, r1, w.rows, Y);
}

}  // namespace

void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1) {
  const size_t groups = w.cols / kQ8Group;
  if (w.format == WeightFormat::I4G64)
    return runQ8(w, Int4Format{static_cast<const float*>(w.scales), groups}, Xq, Xs, n, Y, r0, r1);
  runQ8(w, Mxfp4Format{static_cast<const uint8_t*>(w.scales), groups}, Xq, Xs, n, Y, r0, r1);
}

}  // namespace k3::kernels::avx2
