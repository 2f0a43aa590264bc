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
    case WeightFormat::I4G64: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols / 2;
      const float* s = static_cast<const float*>(w.scales) + r * (cols / kInt4Group);
      float acc = 0.0f;
      for (size_t g = 0; g < cols / kInt4Group; ++g) {
        float part = 0.0f;
        for (size_t k = 0; k < kInt4Group / 2; ++k) {
          uint8_t b = p[g * kInt4Group / 2 + k];
          const float* xg = x + g * kInt4Group + 2 * k;
          part += xg[0] * float(int(b & 0xf) - 8);
          part += xg[1] * float(int(b >> 4) - 8);
        }
        acc += s[g] * part;
      }
      return acc;
    }
    case WeightFormat::MXFP4: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + r * cols / 2;
      const uint8_t* s = static_cast<const uint8_t*>(w.scales) + r * (cols / kMxfp4Group);
      float acc = 0.0f;
      for (size_t g = 0; g < cols / kMxfp4Group; ++g) {
        float part = 0.0f;
        for (size_t k = 0; k < kMxfp4Group / 2; ++k) {
          uint8_t b = p[g * kMxfp4Group / 2 + k];
          const float* xg = x + g * kMxfp4Group + 2 * k;
          part += xg[0] * kE2M1[b & 0xf];
          part += xg[1] * kE2M1[b >> 4];
        }
        acc += ue8m0ToF32(s[g]) * part;
      }
      return acc;
    }
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
