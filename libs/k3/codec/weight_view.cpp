// WeightView: built from stored tensors, sizes, validation and the scalar
// dequantisation reference.
// Thread-safe: no shared mutable state.
#include "k3/codec/weight_view.h"

#include "k3/codec/bf16.h"
#include "k3/codec/mxfp4.h"
#include "k3/codec/quantize.h"
#include "k3/codec/stored_form.h"
#include "k3/io/error.h"

namespace k3::codec {

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

WeightView storedMatrixView(const TensorInfo& t, const void* data, const std::string& path,
                            const TensorInfo* qs, const void* qsData, const std::string& qsPath,
                            size_t O, size_t I) {
  WeightView w;
  w.rows = O;
  w.cols = I;
  w.data = data;
  if (t.dtype == Dtype::U8 || t.dtype == Dtype::I8) {
    if (!qs)
      fail(ErrorKind::Format, path, ": tensor '", t.name, "' is ", dtypeName(t.dtype),
           " without its '.qs' scale sidecar (untrusted container)");
    if (qs->dtype != Dtype::F32)
      fail(ErrorKind::Format, qsPath, ": tensor '", qs->name, "' must be F32, is ", dtypeName(qs->dtype));
    if (isStoredAs(StoredForm::Int8Rows, t, *qs, O, I)) {
      w.format = WeightFormat::I8Row;
    } else if (isStoredAs(StoredForm::Int4G64, t, *qs, O, I)) {
      w.format = WeightFormat::I4G64;
    } else {
      fail(ErrorKind::Format, path, ": tensor '", t.name, "' has shape ", compactShapeText(t.shape), " and ",
           qs->numel(), " scales; expected int8 [", O, ",", I, "] with ", O, " scales or int4-g64 [", O, ",",
           I / 2, "] with ", O * I / 64, " scales");
    }
    w.scales = qsData;
    return w;
  }
  if (t.numel() != O * I || t.shape.size() != 2 || t.shape[0] != O)
    fail(ErrorKind::Format, path, ": tensor '", t.name, "' has shape ", compactShapeText(t.shape), ", expected [", O,
         ",", I, "]");
  if (t.dtype == Dtype::BF16)
    w.format = WeightFormat::BF16;
  else if (t.dtype == Dtype::F32)
    w.format = WeightFormat::F32;
  else
    fail(ErrorKind::Unsupported, path, ": tensor '", t.name, "' has dtype ", dtypeName(t.dtype),
         "; matrices must be BF16, F32 or a quantized U8/I8 + .qs");
  return w;
}

WeightView mxfp4View(size_t O, size_t I, const void* packed, const void* scales) {
  WeightView w;
  w.format = WeightFormat::MXFP4;
  w.rows = O;
  w.cols = I;
  w.data = packed;
  w.scales = scales;
  return w;
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
      dequantizeInt8Rows(static_cast<const int8_t*>(w.data) + row * cols, static_cast<const float*>(w.scales) + row,
                         1, cols, out);
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

}  // namespace k3::codec
