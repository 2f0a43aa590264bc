// The AVX2 kernels of the forward pass (ops_avx2.cpp, kda_kernels_avx2.cpp)
// against their scalar references, on random inputs of odd lengths (vector
// tails), and the vector exp/expm1/tanh/σ against the libm functions in double.
// Tolerances are derived from the documented rounding differences: the AVX2
// reductions add in another order and contract to FMA; the vector math is a
// few ulp off the correctly rounded value.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "k3/codec/quantize.h"
#include "k3/kernels/cpu_features.h"
#include "k3/kernels/kda_kernels.h"
#include "k3/kernels/mla_kernels.h"
#include "k3/kernels/ops_kernels.h"

namespace k3test::kernels {
namespace {

namespace km = k3::kernels;
constexpr float kEps = FLT_EPSILON;  // 2^-23, one ulp at 1

#define REQUIRE_AVX2() \
  if (!k3::kernels::isaSupported(k3::kernels::Isa::Avx2)) GTEST_SKIP() << "no AVX2 on this CPU"
#define REQUIRE_AVX512() \
  if (!k3::kernels::isaSupported(k3::kernels::Isa::Avx512)) GTEST_SKIP() << "no AVX-512 on this CPU"

std::vector<float> randomVec(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Distance in units in the last place between two floats (same-sign zeros
// equal; ±0 equal too). Both must be finite or identical.
int64_t ulpDistance(float a, float b) {
  if (a == b) return 0;
  auto ordered = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Inputs for the math functions: every 97th float bit pattern with |x| up to
// 200 (covers subnormals, tiny, ~0.35 range-reduction seams and the
// overflow/underflow limits), plus special values.
std::vector<float> mathInputs() {
  std::vector<float> xs;
  const float lim = 200.0f;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 97) {
    float f;
    std::memcpy(&f, &bits, 4);
    if (f > lim) break;
    xs.push_back(f);
    xs.push_back(-f);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, inf, -inf, FLT_MAX, -FLT_MAX, FLT_MIN, 88.72283f, 88.72284f, -87.33654f, -103.9721f,
                  -104.0f, 9.0f, 0.34657359f, -0.34657359f, 1e-30f, 1e-8f})
    xs.push_back(f);
  return xs;
}

struct MathCase {
  const char* name;
  void (*vec)(const float*, size_t, float*);
  double (*ref)(double);
  int64_t maxUlp;  // the bound documented in vector_math_avx2.h
};

// σ as the spec writes it in f32, 1/(1+e^−x): once e^−x overflows (x below
// ~−88.72) it is 0, not the subnormal e^x, in the scalar reference too.
double sigmoidRef(double x) {
  const double e = std::exp(-x);
  return e > FLT_MAX ? 0.0 : 1.0 / (1.0 + e);
}
double expRef(double x) { return std::exp(x); }
double expm1Ref(double x) { return std::expm1(x); }
double tanhRef(double x) { return std::tanh(x); }

TEST(OpsSimd, VectorMathIsWithinItsUlpBoundsAndKeepsSpecialValues) {
  REQUIRE_AVX2();
  // σ = 1/(1+e^−x): exp's 2 ulp are damped by 1/(1+e) (≤ 1× near x = 0,
  // e^−x/(1+e^−x) in general), plus one rounding each for the add and divide.
  const MathCase cases[] = {{"exp", km::avx2::expArray, expRef, 2},
                            {"expm1", km::avx2::expm1Array, expm1Ref, 2},
                            {"tanh", km::avx2::tanhArray, tanhRef, 3},
                            {"sigmoid", km::avx2::sigmoidArray, sigmoidRef, 3}};
  const std::vector<float> xs = mathInputs();
  std::vector<float> got(xs.size());
  for (const MathCase& c : cases) {
    c.vec(xs.data(), xs.size(), got.data());
    int64_t worst = 0;
    float worstX = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float want = static_cast<float>(c.ref(static_cast<double>(xs[i])));
      if (std::isnan(want) || std::isinf(want)) {
        EXPECT_TRUE(std::isnan(want) ? std::isnan(got[i]) : got[i] == want) << c.name << "(" << xs[i] << ")";
        continue;
      }
      ASSERT_TRUE(std::isfinite(got[i])) << c.name << "(" << xs[i] << ") = " << got[i] << ", want " << want;
      const int64_t u = ulpDistance(got[i], want);
      if (u > worst) worst = u, worstX = xs[i];
    }
    std::printf("[measured] avx2 %s: worst %lld ulp (at x = %.9g) over %zu inputs\n", c.name,
                static_cast<long long>(worst), static_cast<double>(worstX), xs.size());
    EXPECT_LE(worst, c.maxUlp) << c.name << " at x = " << worstX;
  }
  // Special values, as libm.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float in[8] = {nan, inf, -inf, 0.0f, -0.0f, 100.0f, -200.0f, -nan};
  float e[8], t[8], s[8], m[8];
  km::avx2::expArray(in, 8, e);
  km::avx2::tanhArray(in, 8, t);
  km::avx2::sigmoidArray(in, 8, s);
  km::avx2::expm1Array(in, 8, m);
  EXPECT_TRUE(std::isnan(e[0]) && std::isnan(t[0]) && std::isnan(s[0]) && std::isnan(m[0]) && std::isnan(e[7]));
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[5], inf);
  EXPECT_EQ(e[6], 0.0f);
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_TRUE(t[3] == 0.0f && !std::signbit(t[3]));
  EXPECT_TRUE(t[4] == 0.0f && std::signbit(t[4]));
  EXPECT_EQ(t[5], 1.0f);
  EXPECT_EQ(t[6], -1.0f);
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[3], 0.5f);
  EXPECT_EQ(s[6], 0.0f);
  EXPECT_EQ(m[1], inf);
  EXPECT_EQ(m[2], -1.0f);
  EXPECT_EQ(m[6], -1.0f);
}

// Lengths that exercise the 32-, 16- and 8-wide bodies and every tail.
const size_t kLengths[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 100, 128, 257, 768, 1001};

TEST(OpsSimd, RmsNormMatchesScalar) {
  REQUIRE_AVX2();
  std::mt19937 rng(1);
  for (size_t n : kLengths) {
    if (n == 0) continue;
    const auto x = randomVec(n, rng, 3.0f), w = randomVec(n, rng);
    std::vector<float> a(n), b(n);
    km::scalar::rmsNorm(x.data(), w.data(), n, 1e-5f, a.data());
    km::avx2::rmsNorm(x.data(), w.data(), n, 1e-5f, b.data());
    // The double sum differs only in order (~1e-16 relative), which can move
    // the f32 mean by at most one rounding: r within 1 ulp, so each output
    // (x·r)·w within ~2 ulp; in practice bit-identical.
    for (size_t i = 0; i < n; ++i) EXPECT_LE(ulpDistance(a[i], b[i]), 2) << "n " << n << " i " << i;
  }
}

TEST(OpsSimd, DotAndAxpyMatchScalar) {
  REQUIRE_AVX2();
  std::mt19937 rng(2);
  for (size_t n : kLengths) {
    const auto x = randomVec(n, rng), y = randomVec(n, rng);
    // A sum of n products in any order is within γ_n·Σ|x·y| (γ_n ≈ n·eps)
    // of the exact one; both versions are, so they are within twice that.
    double mag = 0;
    for (size_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(x[i]) * y[i]);
    EXPECT_NEAR(km::avx2::dot(x.data(), y.data(), n), km::scalar::dot(x.data(), y.data(), n),
                2.0 * static_cast<double>(n + 1) * kEps * mag + 1e-30)
        << "n " << n;
    // axpy: FMA rounds a·x + y once, the scalar twice: within one ulp of
    // a·x plus one of the result.
    std::vector<float> a = y, b = y;
    km::scalar::axpy(0.37f, x.data(), a.data(), n);
    km::avx2::axpy(0.37f, x.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i)
      EXPECT_NEAR(a[i], b[i], kEps * (std::fabs(0.37f * x[i]) + std::fabs(a[i]))) << "n " << n << " i " << i;
  }
}

TEST(OpsSimd, SituGluSoftmaxAndGateMatchScalar) {
  REQUIRE_AVX2();
  std::mt19937 rng(3);
  for (size_t n : kLengths) {
    // Gate/up values spread wide enough to saturate both tanh and σ.
    const auto g = randomVec(n, rng, 8.0f), u = randomVec(n, rng, 40.0f);
    std::vector<float> a(n), b(n);
    km::scalar::situGlu(g.data(), u.data(), n, 4.0f, 25.0f, a.data());
    km::avx2::situGlu(g.data(), u.data(), n, 4.0f, 25.0f, b.data());
    // Relative: two tanh (≤ 3 ulp each), σ (≤ 3), libm's own ≤ 1 ulp per
    // call, and four products: under 16 ulp of the value.
    for (size_t i = 0; i < n; ++i)
      EXPECT_NEAR(a[i], b[i], 16 * kEps * std::fabs(a[i]) + 1e-37f) << "n " << n << " i " << i;

    std::vector<float> sa = randomVec(n, rng, 5.0f), sb = sa;
    km::scalar::softmax(sa.data(), n);
    km::avx2::softmax(sb.data(), n);
    // Each e^x within 2 ulp (libm ≤ 1), the f32 sum in another order (γ_n,
    // all terms positive), one division: relative (n + 6)·eps.
    for (size_t i = 0; i < n; ++i)
      EXPECT_NEAR(sa[i], sb[i], (static_cast<float>(n) + 6) * kEps * sa[i] + 1e-37f) << "n " << n << " i " << i;

    std::vector<float> ga = randomVec(n, rng, 2.0f), gb = ga;
    km::scalar::mulSigmoid(ga.data(), g.data(), n);
    km::avx2::mulSigmoid(gb.data(), g.data(), n);
    for (size_t i = 0; i < n; ++i)  // σ ≤ 3 ulp vs libm's ≤ 1, one product
      EXPECT_NEAR(ga[i], gb[i], 6 * kEps * std::fabs(ga[i]) + 1e-37f) << "n " << n << " i " << i;
  }
}

// The AVX-512 ops are the AVX2 ones on 16 lanes: the same bits, special
// values and subnormals included, so the AVX2 accuracy bounds above carry
// over. exp and expm1 over a sweep of float bit patterns (every 997th: all
// exponents, both signs, NaNs, infinities); SiTU-GLU on random values with
// specials mixed in, at lengths that exercise the masked tail.
TEST(OpsSimd, Avx512OpsAreAvx2BitForBit) {
  REQUIRE_AVX512();
  std::vector<float> x;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 997) {
    float f;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  using Fn = void (*)(const float*, size_t, float*);
  for (auto [name, v2, v5] : {std::tuple<const char*, Fn, Fn>{"exp", &km::avx2::expArray, &km::avx512::expArray},
                              std::tuple<const char*, Fn, Fn>{"expm1", &km::avx2::expm1Array, &km::avx512::expm1Array}}) {
    std::vector<float> a(x.size()), b(x.size());
    v2(x.data(), x.size(), a.data());
    v5(x.data(), x.size(), b.data());
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (std::memcmp(&a[i], &b[i], 4) != 0 && differ++ == 0) first = i;
    EXPECT_EQ(differ, 0u) << name << ": first at x = " << x[first] << " (" << a[first] << " vs " << b[first] << ")";
  }
  std::mt19937 rng(9);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-40f, -1e-40f, 200.0f, -200.0f,
                            1e30f, -1e30f};
  for (size_t n : kLengths) {
    auto g = randomVec(n, rng, 10.0f), u = randomVec(n, rng, 50.0f);
    for (size_t i = 0; i < n; i += 3) g[i] = specials[(i / 3) % std::size(specials)];
    for (size_t i = 1; i < n; i += 5) u[i] = specials[(i / 5 + 3) % std::size(specials)];
    std::vector<float> a(n), b(n);
    km::avx2::situGlu(g.data(), u.data(), n, 4.0f, 25.0f, a.data());
    km::avx512::situGlu(g.data(), u.data(), n, 4.0f, 25.0f, b.data());
    if (n > 0) {  // an empty vector's data() may be null, which memcmp must not get
      EXPECT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "n " << n;
    }
  }
}

TEST(OpsSimd, ElementwiseResultsDoNotDependOnTheArrayLength) {
  REQUIRE_AVX2();
  // An element in the masked tail gets exactly the bits it gets in the body:
  // a token's SiTU output must not depend on how many tokens share the call.
  std::mt19937 rng(4);
  const auto g = randomVec(40, rng, 6.0f), u = randomVec(40, rng, 30.0f);
  std::vector<float> full(40), part(37);
  km::avx2::situGlu(g.data(), u.data(), 40, 4.0f, 25.0f, full.data());
  for (size_t n : {1, 5, 8, 13, 37}) {
    km::avx2::situGlu(g.data() + 40 - n, u.data() + 40 - n, n, 4.0f, 25.0f, part.data());
    EXPECT_EQ(std::memcmp(part.data(), full.data() + 40 - n, n * 4), 0) << "n " << n;
  }
}

TEST(OpsSimd, AttnResSumsMatchScalarInDouble) {
  REQUIRE_AVX2();
  std::mt19937 rng(5);
  for (size_t n : kLengths) {
    const auto v = randomVec(n, rng, 4.0f), w = randomVec(n, rng);
    double a1, a2, b1, b2;
    km::scalar::dotAndSquaresF64(v.data(), w.data(), n, &a1, &a2);
    km::avx2::dotAndSquaresF64(v.data(), w.data(), n, &b1, &b2);
    // Exact products, double sums in another order: γ_n in double.
    double mag = 0;
    for (size_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(v[i]) * w[i]);
    EXPECT_NEAR(a1, b1, 2.0 * (n + 1) * DBL_EPSILON * mag + 1e-300) << "n " << n;
    EXPECT_NEAR(a2, b2, 2.0 * (n + 1) * DBL_EPSILON * a2 + 1e-300) << "n " << n;
  }
}

TEST(OpsSimd, KdaConvNormAndDecayMatchScalar) {
  REQUIRE_AVX2();
  std::mt19937 rng(6);
  for (size_t K : {4, 3}) {  // K = 4 has the vector path, others fall back
    for (size_t ch : {8, 19, 64, 128}) {
      auto winA = randomVec(ch * K, rng), winB = winA;
      const auto taps = randomVec(ch * K, rng, 0.5f);
      for (int step = 0; step < 5; ++step) {  // several tokens through the window
        auto xa = randomVec(ch, rng, 2.0f), xb = xa;
        km::scalar::shortConvSilu(winA.data(), taps.data(), xa.data(), ch, K);
        km::avx2::shortConvSilu(winB.data(), taps.data(), xb.data(), ch, K);
        EXPECT_EQ(winA, winB) << "windows only move values";
        // The K-term sum (FMA-contracted, same order) and SiLU: |Δ| within
        // K ulp of Σ|tap·win| times the SiLU slope (≤ 1.1), plus σ's 4 ulp.
        for (size_t c = 0; c < ch; ++c) {
          double mag = 0;
          for (size_t j = 0; j < K; ++j) mag += std::fabs(taps[c * K + j] * winA[c * K + j]);
          EXPECT_NEAR(xa[c], xb[c], 1.1 * K * kEps * mag + 4 * kEps * std::fabs(xa[c]) + 1e-37)
              << "K " << K << " ch " << ch << " c " << c;
        }
      }
    }
  }
  for (size_t d : {8, 13, 64, 128}) {
    const auto q = randomVec(d, rng), k = randomVec(d, rng), f = randomVec(d, rng, 3.0f),
               dt = randomVec(d, rng);
    std::vector<float> qa(d), ka(d), qb(d), kb(d), aa(d), ab(d);
    km::scalar::normalizeQk(q.data(), k.data(), d, qa.data(), ka.data());
    km::avx2::normalizeQk(q.data(), k.data(), d, qb.data(), kb.data());
    // Sums of squares (positive terms) in another order: γ_d relative; the
    // 1/sqrt halves it; plus three roundings.
    for (size_t j = 0; j < d; ++j) {
      EXPECT_NEAR(qa[j], qb[j], (d + 4) * kEps * std::fabs(qa[j])) << "d " << d;
      EXPECT_NEAR(ka[j], kb[j], (d + 4) * kEps * std::fabs(ka[j])) << "d " << d;
    }
    km::scalar::decay(f.data(), dt.data(), 1.7f, -5.0f, d, aa.data());
    km::avx2::decay(f.data(), dt.data(), 1.7f, -5.0f, d, ab.data());
    // α = exp(−5σ): σ's 3 ulp become ≤ 15 ulp of absolute exponent error
    // (|−5σ| ≤ 5), i.e. ≤ 15·eps relative in α, plus exp's 2 ulp.
    for (size_t j = 0; j < d; ++j) EXPECT_NEAR(aa[j], ab[j], 20 * kEps * aa[j]) << "d " << d;
  }
}

double relL2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(a[i]) * a[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

TEST(OpsSimd, KdaDeltaRuleMatchesScalarOverTokens) {
  REQUIRE_AVX2();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> decayDist(0.0067f, 1.0f);  // exp(−5) … 1
  for (size_t d : {8, 13, 40, 64, 128}) {  // 32-wide blocks, 8-wide blocks, single columns
    std::vector<float> Sa(d * d, 0.0f), Sb(d * d, 0.0f), oa(d), ob(d);
    for (int t = 0; t < 8; ++t) {
      std::vector<float> alpha(d), k = randomVec(d, rng), q = randomVec(d, rng), v = randomVec(d, rng);
      for (float& a : alpha) a = decayDist(rng);
      double kk = 0, qq = 0;  // unit k, q·d^−½ as in the layer
      for (size_t j = 0; j < d; ++j) kk += k[j] * k[j], qq += q[j] * q[j];
      for (size_t j = 0; j < d; ++j) k[j] /= static_cast<float>(std::sqrt(kk)), q[j] /= static_cast<float>(std::sqrt(qq * d));
      const float beta = 0.2f + 0.1f * static_cast<float>(t);
      km::scalar::deltaRule(Sa.data(), d, alpha.data(), k.data(), q.data(), v.data(), beta, oa.data());
      km::avx2::deltaRule(Sb.data(), d, alpha.data(), k.data(), q.data(), v.data(), beta, ob.data());
      // Same per-column summation order over the d key rows; only the FMA
      // contraction differs: each length-d sum moves by ≤ γ_d·Σ|terms|. With
      // unit k and the contraction S ← (I − βkkᵀ)Diag(α)S, that stays below
      // ~d·eps ≈ 1.5e-5 relative even at d = 128 (random signs give far less).
      EXPECT_LT(relL2(Sa, Sb), 2e-5) << "d " << d << " token " << t;
      EXPECT_LT(relL2(oa, ob), 2e-5) << "d " << d << " token " << t;
    }
  }
}

// A chunk's tokens through deltaRuleTokens (the layer's prefill: each
// column block of S runs through every token while it is in L1) give the
// bits of one deltaRule call per token, on both paths; v and o strided as
// in the layer (one head's slice of a wider row).
TEST(OpsSimd, KdaDeltaRuleTokensIsOneCallPerToken) {
  REQUIRE_AVX2();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> decayDist(0.0067f, 1.0f);
  for (size_t d : {8, 13, 40, 128}) {
    const size_t n = 7, stride = d + 5;
    std::vector<float> alpha(n * d), k(n * d), q(n * d), v(n * stride), beta(n);
    for (float& a : alpha) a = decayDist(rng);
    for (auto* x : {&k, &q, &v}) *x = randomVec(x->size(), rng);
    for (size_t t = 0; t < n; ++t) beta[t] = 0.1f + 0.1f * static_cast<float>(t);
    for (int path = 0; path < 2; ++path) {
      auto one = path ? km::avx2::deltaRule : km::scalar::deltaRule;
      auto tokens = path ? km::avx2::deltaRuleTokens : km::scalar::deltaRuleTokens;
      std::vector<float> S0 = randomVec(d * d, rng), S1 = S0, o0(n * stride, 0.0f), o1(n * stride, 0.0f);
      for (size_t t = 0; t < n; ++t)
        one(S0.data(), d, &alpha[t * d], &k[t * d], &q[t * d], &v[t * stride], beta[t], &o0[t * stride]);
      tokens(S1.data(), d, n, alpha.data(), k.data(), q.data(), v.data(), stride, beta.data(), o1.data());
      EXPECT_EQ(0, std::memcmp(S0.data(), S1.data(), S0.size() * sizeof(float))) << "d " << d << " path " << path;
      EXPECT_EQ(0, std::memcmp(o0.data(), o1.data(), o0.size() * sizeof(float))) << "d " << d << " path " << path;
      EXPECT_NE(o1[(n - 1) * stride + d - 1], 0.0f);
    }
  }
}

TEST(OpsSimd, MlaScoresAndWeightedLatentMatchScalarAndIgnoreGrouping) {
  REQUIRE_AVX2();
  std::mt19937 rng(8);
  struct Dims {
    size_t kvr, rope;
  };
  for (Dims dm : {Dims{256, 32}, Dims{64, 32}, Dims{19, 5}, Dims{40, 8}}) {
    const size_t kvr = dm.kvr, rope = dm.rope, qk = 7 + rope, maxLen = 13, nq = 9;
    const auto L = randomVec(maxLen * kvr, rng), R = randomVec(maxLen * rope, rng);
    const auto qa = randomVec(nq * kvr, rng), qr = randomVec(nq * qk, rng);
    const float scale = 0.125f;
    for (size_t len : {1, 2, 5, 13}) {
      std::vector<float> sa(nq * maxLen), sb(nq * maxLen), one(maxLen);
      km::scalar::mlaScores(qa.data(), kvr, qr.data(), qk, nq, L.data(), R.data(), len, kvr, rope, scale, sa.data(),
                            maxLen);
      km::avx2::mlaScores(qa.data(), kvr, qr.data(), qk, nq, L.data(), R.data(), len, kvr, rope, scale, sb.data(),
                          maxLen);
      for (size_t j = 0; j < nq; ++j) {
        // (kvr + rope)-term sums in another order: γ·Σ|terms|, times scale.
        for (size_t s = 0; s < len; ++s) {
          double mag = 0;
          for (size_t i = 0; i < kvr; ++i) mag += std::fabs(qa[j * kvr + i] * L[s * kvr + i]);
          for (size_t i = 0; i < rope; ++i) mag += std::fabs(qr[j * qk + i] * R[s * rope + i]);
          EXPECT_NEAR(sa[j * maxLen + s], sb[j * maxLen + s], 2.0 * (kvr + rope + 2) * kEps * mag * scale)
              << "kvr " << kvr << " j " << j << " s " << s;
        }
        // A query alone gets the same bits as inside a group of 9.
        km::avx2::mlaScores(qa.data() + j * kvr, kvr, qr.data() + j * qk, qk, 1, L.data(), R.data(), len, kvr, rope,
                            scale, one.data(), maxLen);
        EXPECT_EQ(std::memcmp(one.data(), sb.data() + j * maxLen, len * 4), 0) << "kvr " << kvr << " j " << j;
      }
      // Weighted latent: probabilities in [0, 1); per element the same
      // position order, FMA contraction only: len ulp of Σ p·|L|.
      std::vector<float> p(nq * maxLen);
      std::uniform_real_distribution<float> u01(0.0f, 1.0f);
      for (float& x : p) x = u01(rng);
      std::vector<float> ca(nq * kvr), cb(nq * kvr), c1(kvr);
      km::scalar::mlaWeightedLatent(p.data(), maxLen, nq, L.data(), len, kvr, ca.data(), kvr);
      km::avx2::mlaWeightedLatent(p.data(), maxLen, nq, L.data(), len, kvr, cb.data(), kvr);
      for (size_t j = 0; j < nq; ++j) {
        for (size_t i = 0; i < kvr; ++i) {
          double mag = 0;
          for (size_t s = 0; s < len; ++s) mag += p[j * maxLen + s] * std::fabs(L[s * kvr + i]);
          EXPECT_NEAR(ca[j * kvr + i], cb[j * kvr + i], (len + 1) * kEps * mag) << "kvr " << kvr << " j " << j;
        }
        km::avx2::mlaWeightedLatent(p.data() + j * maxLen, maxLen, 1, L.data(), len, kvr, c1.data(), kvr);
        EXPECT_EQ(std::memcmp(c1.data(), cb.data() + j * kvr, kvr * 4), 0) << "kvr " << kvr << " j " << j;
      }
    }
  }
}

// Decode reads int8-row kv_b in place: every ISA's *I8 kernel must give the
// bits of the rows dequantized first (codec's scalar dequantizer) and then
// the f32 kernel (weighted latent) or dot() (value rows), tails included.
TEST(OpsSimd, MlaInt8RowKernelsAreDequantizedRowsBitForBit) {
  REQUIRE_AVX2();
  std::mt19937 rng(32);
  std::uniform_int_distribution<int> q8(-127, 127);
  for (size_t kvr : {512, 64, 40, 19, 13, 7}) {
    for (size_t len : {1, 2, 5, 128}) {
      std::vector<int8_t> W(len * kvr);
      for (auto& v : W) v = static_cast<int8_t>(q8(rng));
      std::vector<float> scales = randomVec(len, rng, 0.01f);
      scales[0] = -std::fabs(scales[0]);  // a negative scale: dequantized padding would be -0
      std::vector<float> L(len * kvr);
      k3::codec::dequantizeInt8Rows(km::Isa::Scalar, W.data(), scales.data(), len, kvr, L.data());
      for (size_t nq : {1, 3, 4, 5}) {
        const size_t pStride = len + 3, clStride = kvr + 1;
        const auto p = randomVec(nq * pStride, rng);
        std::vector<float> want(nq * clStride, 7.0f), got(nq * clStride, 7.0f);
        for (bool simd : {false, true}) {
          if (simd) {
            km::avx2::mlaWeightedLatent(p.data(), pStride, nq, L.data(), len, kvr, want.data(), clStride);
            km::avx2::mlaWeightedLatentI8(p.data(), pStride, nq, W.data(), scales.data(), len, kvr, got.data(), clStride);
          } else {
            km::scalar::mlaWeightedLatent(p.data(), pStride, nq, L.data(), len, kvr, want.data(), clStride);
            km::scalar::mlaWeightedLatentI8(p.data(), pStride, nq, W.data(), scales.data(), len, kvr, got.data(),
                                            clStride);
          }
          EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
              << "weighted latent, simd " << simd << " kvr " << kvr << " len " << len << " nq " << nq;
        }
      }
      const auto cl = randomVec(kvr, rng);
      std::vector<float> dots(len), dotsScalar(len), wantAvx(len), wantScalar(len);
      km::avx2::mlaRowDotsI8(W.data(), scales.data(), len, kvr, cl.data(), dots.data());
      km::scalar::mlaRowDotsI8(W.data(), scales.data(), len, kvr, cl.data(), dotsScalar.data());
      for (size_t r = 0; r < len; ++r) {
        wantAvx[r] = km::avx2::dot(&L[r * kvr], cl.data(), kvr);
        wantScalar[r] = km::scalar::dot(&L[r * kvr], cl.data(), kvr);
      }
      EXPECT_EQ(std::memcmp(dots.data(), wantAvx.data(), len * 4), 0) << "row dots, kvr " << kvr << " len " << len;
      EXPECT_EQ(std::memcmp(dotsScalar.data(), wantScalar.data(), len * 4), 0)
          << "scalar row dots, kvr " << kvr << " len " << len;
    }
  }
}

}  // namespace
}  // namespace k3test::kernels
