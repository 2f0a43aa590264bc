// Scalar IDOT reference (MXFP4 / int4-g64 / int8-row x int8 activations) and its dispatch.
// Thread-safe: no shared mutable state.
#include "k3/kernels/act_q8.h"

#include <cmath>

#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/io/error.h"
#include "k3/kernels/isa_dispatch.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels {

namespace {

// Integer value of each 4-bit code: doubled e2m1 for MXFP4, nibble-8 for int4.
constexpr int8_t kInt4Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

// int8 rows: y = s[r] * sum_g (float)(sum_{i in g} q*xq) * xs[g] (act_q8.h).
float dotRowI8Q8Scalar(const WeightView& w, size_t r, const int8_t* xq, const float* xs) {
  const size_t cols = w.cols, groups = cols / kQ8Group;
  const int8_t* p = static_cast<const int8_t*>(w.data) + r * cols;
  float acc = 0.0f;
  for (size_t g = 0; g < groups; ++g) {
    int32_t dot = 0;
    for (size_t i = g * kQ8Group; i < (g + 1) * kQ8Group; ++i) dot += int32_t(p[i]) * xq[i];
    acc += float(dot) * xs[g];
  }
  return static_cast<const float*>(w.scales)[r] * acc;
}

float dotRowQ8Scalar(const WeightView& w, size_t r, const int8_t* xq, const float* xs) {
  if (w.format == WeightFormat::I8Row) return dotRowI8Q8Scalar(w, r, xq, xs);
  const size_t cols = w.cols, groups = cols / kQ8Group;
  const bool mx = w.format == WeightFormat::MXFP4;
  const int8_t* values = mx ? kE2M1x2 : kInt4Values;
  const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols / 2;
  float acc = 0.0f;
  for (size_t g = 0; g < groups; ++g) {
    int32_t dot = 0;
    for (size_t k = 0; k < kQ8Group / 2; ++k) {
      uint8_t b = p[g * kQ8Group / 2 + k];
      dot += int32_t(values[b & 0xf]) * xq[g * kQ8Group + 2 * k];
      dot += int32_t(values[b >> 4]) * xq[g * kQ8Group + 2 * k + 1];
    }
    float factor;
    if (mx)
      factor = ue8m0ToF32(static_cast<const uint8_t*>(w.scales)[r * groups + g]) * 0.5f * xs[g];
    else
      factor = static_cast<const float*>(w.scales)[r * (groups / 2) + g / 2] * xs[g];
    acc += float(dot) * factor;
  }
  return acc;
}

void checkQ8(const WeightView& w, size_t r0, size_t r1, const char* what, bool anyFormat) {
  checkWeightView(w, r0, r1, what);
  if (anyFormat ? !hasQ8Kernel(w.format) : w.format != WeightFormat::MXFP4)
    fail(ErrorKind::Usage, what, ": needs an MXFP4", anyFormat ? ", I4G64 or I8Row" : "",
         " weight, got ", weightFormatName(w.format));
  if (w.cols % kQ8Group)  // I8Row only; the 4-bit formats' checks imply it
    fail(ErrorKind::Usage, what, ": ", w.cols, " columns is not a multiple of ", kQ8Group);
}

// MXFP4 and int8 rows run the AVX-512 VNNI kernels where available; int4 uses
// the AVX2 one there.
void runQ8(kernels::Isa isa, const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
           size_t r0, size_t r1) {
  const auto kernel = w.format == WeightFormat::I8Row
                           ? kernels::pickKernel(isa, &scalar::matmulQ8, &avx2::matmulI8Q8, &avx512::matmulI8Q8)
                       : w.format == WeightFormat::MXFP4
                           ? kernels::pickKernel(isa, &scalar::matmulQ8, &avx2::matmulQ8, &avx512::matmulMxfp4Q8)
                           : kernels::pickKernel(isa, &scalar::matmulQ8, &avx2::matmulQ8);
  kernel(w, Xq, Xs, n, Y, r0, r1);
}

}  // namespace

bool hasQ8Kernel(WeightFormat f) {
  return f == WeightFormat::MXFP4 || f == WeightFormat::I4G64 || f == WeightFormat::I8Row;
}

namespace scalar {
void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs) {
  for (size_t g = 0; g < n / kQ8Group; ++g) {
    const float* src = x + g * kQ8Group;
    float am = 0.0f;
    for (int i = 0; i < kQ8Group; ++i) {
      float a = std::fabs(src[i]);
      am = a > am ? a : am;
    }
    float s = am / 127.0f;
    if (s < kScaleFloor) s = kScaleFloor;
    float inv = 1.0f / s;
    for (int i = 0; i < kQ8Group; ++i) {
      float v = std::fmax(-127.0f, std::fmin(127.0f, std::rint(src[i] * inv)));
      xq[g * kQ8Group + i] = int8_t(v);
    }
    xs[g] = s;
  }
}

void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1) {
  const size_t groups = w.cols / kQ8Group;
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    for (size_t v = 0; v < n; ++v)
      for (size_t r = rb; r < re; ++r)
        Y[v * w.rows + r] = dotRowQ8Scalar(w, r, Xq + v * w.cols, Xs + v * groups);
  }
}
}  // namespace scalar

void quantizeActivationsQ8_32(kernels::Isa isa, const float* x, size_t n, int8_t* xq, float* xs) {
  if (n % kQ8Group)
    fail(ErrorKind::Usage, "quantizeActivationsQ8_32: length ", n, " is not a multiple of 32");
  K3_KERNEL3_FOR(kernels::requireIsa(isa, "quantizeActivationsQ8_32"), quantizeActivationsQ8_32)(x, n, xq, xs);
}

void matmulMxfp4Q8(kernels::Isa isa, const WeightView& w, const int8_t* Xq, const float* Xs, size_t n,
                   float* Y, size_t r0, size_t r1) {
  checkQ8(w, r0, r1, "matmulMxfp4Q8", false);
  runQ8(kernels::requireIsa(isa, "matmulMxfp4Q8"), w, Xq, Xs, n, Y, r0, r1);
}
void matvecMxfp4Q8(kernels::Isa isa, const WeightView& w, const int8_t* xq, const float* xs, float* y,
                   size_t r0, size_t r1) {
  checkQ8(w, r0, r1, "matvecMxfp4Q8", false);
  runQ8(kernels::requireIsa(isa, "matvecMxfp4Q8"), w, xq, xs, 1, y, r0, r1);
}
void matmulQ8(kernels::Isa isa, const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1) {
  checkQ8(w, r0, r1, "matmulQ8", true);
  runQ8(kernels::requireIsa(isa, "matmulQ8"), w, Xq, Xs, n, Y, r0, r1);
}
void matvecQ8(kernels::Isa isa, const WeightView& w, const int8_t* xq, const float* xs, float* y,
              size_t r0, size_t r1) {
  checkQ8(w, r0, r1, "matvecQ8", true);
  runQ8(kernels::requireIsa(isa, "matvecQ8"), w, xq, xs, 1, y, r0, r1);
}

void quantizeActivationsQ8_32(const float* x, size_t n, int8_t* xq, float* xs) {
  quantizeActivationsQ8_32(kernels::bestIsa(), x, n, xq, xs);
}
void matvecMxfp4Q8(const WeightView& w, const int8_t* xq, const float* xs, float* y, size_t r0,
                   size_t r1) {
  matvecMxfp4Q8(kernels::bestIsa(), w, xq, xs, y, r0, r1);
}
void matmulMxfp4Q8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
                   size_t r0, size_t r1) {
  matmulMxfp4Q8(kernels::bestIsa(), w, Xq, Xs, n, Y, r0, r1);
}
void matvecQ8(const WeightView& w, const int8_t* xq, const float* xs, float* y, size_t r0,
              size_t r1) {
  matvecQ8(kernels::bestIsa(), w, xq, xs, y, r0, r1);
}
void matmulQ8(const WeightView& w, const int8_t* Xq, const float* Xs, size_t n, float* Y,
              size_t r0, size_t r1) {
  matmulQ8(kernels::bestIsa(), w, Xq, Xs, n, Y, r0, r1);
}

}  // namespace k3::kernels
