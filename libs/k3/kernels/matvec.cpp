// Scalar matvec/matmul reference kernels and the run-time ISA dispatch.
// Thread-safe: no shared mutable state.
#include "k3/kernels/matvec.h"

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/kernels/isa_dispatch.h"
#include "k3/kernels/matvec_kernels.h"

namespace k3::kernels {

namespace {

float groupScale(float s) { return s; }
float groupScale(uint8_t e) { return ue8m0ToF32(e); }

// Two 4-bit codes a byte (low nibble first), G of them a group with one
// scale: int4-g64 (value q - 8, f32 scale) and MXFP4 (e2m1, UE8M0 scale).
template <size_t G, typename Scale, typename Decode>
float groupedNibbleDot(const WeightView& w, size_t r, const float* x, const Scale* scales, Decode value) {
  const size_t cols = w.cols;
  const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols / 2;
  const Scale* s = scales + r * (cols / G);
  float acc = 0.0f;
  for (size_t g = 0; g < cols / G; ++g) {
    float part = 0.0f;
    for (size_t k = 0; k < G / 2; ++k) {
      uint8_t b = p[g * G / 2 + k];
      const float* xg = x + g * G + 2 * k;
      part += xg[0] * value(static_cast<uint8_t>(b & 0xf));
      part += xg[1] * value(static_cast<uint8_t>(b >> 4));
    }
    acc += groupScale(s[g]) * part;
  }
  return acc;
}

// One output element, in the accumulation order documented in matvec.h.
float dotRowScalar(const WeightView& w, size_t r, const float* x) {
  const size_t cols = w.cols;
  switch (w.format) {
    case WeightFormat::F32: {
      const float* p = static_cast<const float*>(w.data) + r * cols;
      float acc = 0.0f;
      for (size_t i = 0; i < cols; ++i) acc += x[i] * p[i];
      return acc;
    }
    case WeightFormat::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + r * cols;
      float acc = 0.0f;
      for (size_t i = 0; i < cols; ++i) acc += x[i] * bf16ToF32(p[i]);
      return acc;
    }
    case WeightFormat::I8Row: {
      const int8_t* p = static_cast<const int8_t*>(w.data) + r * cols;
      float acc = 0.0f;
      for (size_t i = 0; i < cols; ++i) acc += x[i] * float(p[i]);
      return static_cast<const float*>(w.scales)[r] * acc;
    }
    case WeightFormat::I4G64:
      return groupedNibbleDot<kInt4Group>(w, r, x, static_cast<const float*>(w.scales),
                                          [](uint8_t q) { return float(int(q) - 8); });
    case WeightFormat::MXFP4:
      return groupedNibbleDot<kMxfp4Group>(w, r, x, static_cast<const uint8_t*>(w.scales),
                                           [](uint8_t q) { return kE2M1[q]; });
  }
  return 0.0f;
}

}  // namespace

namespace scalar {
void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  for (size_t rb = r0; rb < r1; rb += kRowBlock) {
    size_t re = rb + kRowBlock < r1 ? rb + kRowBlock : r1;
    for (size_t v = 0; v < n; ++v)
      for (size_t r = rb; r < re; ++r) Y[v * w.rows + r] = dotRowScalar(w, r, X + v * w.cols);
  }
}
}  // namespace scalar

void matmul(kernels::Isa isa, const WeightView& w, const float* X, size_t n, float* Y, size_t r0,
            size_t r1) {
  checkWeightView(w, r0, r1, "matmul");
  K3_KERNEL3_FOR(kernels::requireIsa(isa, "matmul"), matmul)(w, X, n, Y, r0, r1);
}

void matvec(kernels::Isa isa, const WeightView& w, const float* x, float* y, size_t r0, size_t r1) {
  checkWeightView(w, r0, r1, "matvec");
  K3_KERNEL3_FOR(kernels::requireIsa(isa, "matvec"), matmul)(w, x, 1, y, r0, r1);
}

void matvec(const WeightView& w, const float* x, float* y, size_t r0, size_t r1) {
  matvec(kernels::bestIsa(), w, x, y, r0, r1);
}
void matmul(const WeightView& w, const float* X, size_t n, float* Y, size_t r0, size_t r1) {
  matmul(kernels::bestIsa(), w, X, n, Y, r0, r1);
}

}  // namespace k3::kernels
