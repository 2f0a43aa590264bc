// WeightView sizes, validation and the scalar dequantisation reference.
#include "k3/quant/weight_view.h"

#include "k3/io/error.h"
#include "k3/quant/bf16.h"
#include "k3/quant/isa_kernels.h"
#include "k3/quant/mxfp4.h"
#include "k3/quant/quantize.h"

namespace k3::quant {

const char* weightFormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32: return "F32";
    case WeightFormat::BF16: return "BF16";
    case WeightFormat::I8Row: return "I8Row";
    case WeightFormat::I4G64: return "I4G64";
    case WeightFormat::MXFP4: return "MXFP4";
  }
  return "?";
}

size_t weightDataBytes(const WeightView& w) {
  size_t n = w.rows * w.cols;
  switch (w.format) {
    case WeightFormat::F32: return n * 4;
    case WeightFormat::BF16: return n * 2;
    case WeightFormat::I8Row: return n;
    case WeightFormat::I4G64:
    case WeightFormat::MXFP4: return n / 2;
  }
  return 0;
}

size_t weightScaleBytes(const WeightView& w) {
  switch (w.format) {
    case WeightFormat::F32:
    case WeightFormat::BF16: return 0;
    case WeightFormat::I8Row: return w.rows * 4;
    case WeightFormat::I4G64: return w.rows * (w.cols / kInt4Group) * 4;
    case WeightFormat::MXFP4: return w.rows * (w.cols / kMxfp4Group);
  }
  return 0;
}

void checkWeightView(const WeightView& w, size_t r0, size_t r1, const char* what) {
  const char* fmt = weightFormatName(w.format);
  if (r0 > r1 || r1 > w.rows)
    fail(ErrorKind::Usage, what, ": row range [", r0, ", ", r1, ") outside a ", fmt, " [",
         w.rows, ", ", w.cols, "] weight");
  if (w.rows && w.cols && !w.data)
    fail(ErrorKind::Usage, what, ": ", fmt, " weight has no data pointer");
  bool scaled = w.format == WeightFormat::I8Row || w.format == WeightFormat::I4G64 ||
                w.format == WeightFormat::MXFP4;
  if (scaled && w.rows && w.cols && !w.scales)
    fail(ErrorKind::Usage, what, ": ", fmt, " weight has no scales pointer");
  if (w.format == WeightFormat::I4G64 && w.cols % kInt4Group)
    fail(ErrorKind::Usage, what, ": I4G64 weight has ", w.cols, " columns, not a multiple of 64");
  if (w.format == WeightFormat::MXFP4 && w.cols % kMxfp4Group)
    fail(ErrorKind::Usage, what, ": MXFP4 weight has ", w.cols, " columns, not a multiple of 32");
}

void dequantizeRow(const WeightView& w, size_t row, float* out) {
  checkWeightView(w, row, row + 1, "dequantizeRow");
  const size_t cols = w.cols;
  switch (w.format) {
    case WeightFormat::F32: {
      const float* p = static_cast<const float*>(w.data) + row * cols;
      for (size_t i = 0; i < cols; ++i) out[i] = p[i];
      break;
    }
    case WeightFormat::BF16: {
      const uint16_t* p = static_cast<const uint16_t*>(w.data) + row * cols;
      for (size_t i = 0; i < cols; ++i) out[i] = bf16ToF32(p[i]);
      break;
    }
    case WeightFormat::I8Row: {
      const int8_t* p = static_cast<const int8_t*>(w.data) + row * cols;
      float s = static_cast<const float*>(w.scales)[row];
      for (size_t i = 0; i < cols; ++i) out[i] = float(p[i]) * s;
      break;
    }
    case WeightFormat::I4G64: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + row * cols / 2;
      const float* s = static_cast<const float*>(w.scales) + row * (cols / kInt4Group);
      for (size_t i = 0; i < cols; ++i) {
        int nib = (i & 1) ? (p[i / 2] >> 4) : (p[i / 2] & 0xf);
        out[i] = float(nib - 8) * s[i / kInt4Group];
      }
      break;
    }
    case WeightFormat::MXFP4: {
      const uint8_t* p = static_cast<const uint8_t*>(w.data) + row * cols / 2;
      const uint8_t* s = static_cast<const uint8_t*>(w.scales) + row * (cols / kMxfp4Group);
      for (size_t i = 0; i < cols; ++i) {
        int code = (i & 1) ? (p[i / 2] >> 4) : (p[i / 2] & 0xf);
        out[i] = kE2M1[code] * ue8m0ToF32(s[i / kMxfp4Group]);
      }
      break;
    }
  }
}

}  // namespace k3::quant
