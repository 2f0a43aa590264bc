// WeightView: one [rows, cols] weight matrix exactly as stored in the container
// (spec 4, 5.3-5.5), built from the stored tensors (the stored-form rule of
// stored_form.h), and the scalar dequantisation every kernel is tested
// against. A view borrows its bytes (a mapping outlives it); the functions
// are pure: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "k3/format/safetensors_header.h"

namespace k3::codec {

enum class WeightFormat {
  F32,    // float [rows*cols]
  BF16,   // uint16 [rows*cols]
  I8Row,  // int8 [rows*cols], scales float[rows]            (spec 5.3)
  I4G64,  // packed nibbles [rows*cols/2], float[rows*cols/64] (spec 5.4), cols % 64 == 0
  MXFP4,  // packed e2m1 [rows*cols/2], ue8m0 uint8[rows*cols/32] (spec 4), cols % 32 == 0
};

const char* weightFormatName(WeightFormat f);

struct WeightView {  // one [rows, cols] matrix as stored (row-major)
  WeightFormat format = WeightFormat::F32;
  size_t rows = 0, cols = 0;
  const void* data = nullptr;    // F32 floats, BF16 uint16, I8 int8 [rows*cols], I4/MXFP4 packed [rows*cols/2]
  const void* scales = nullptr;  // I8: float[rows]; I4: float[rows*cols/64]; MXFP4: uint8 ue8m0 [rows*cols/32]; else null
  // Kernel hint for callers that choose the kernel (k3::model::linear):
  // multiply with int8-quantised activations (act_q8.h, an approximation) where
  // the format has IDOT kernels. The matvec kernels themselves ignore it.
  bool int8Activations = false;
};

// The view of a stored matrix the model multiplies by, expected as [O, I]
// (spec §5.9): tensor `t` (bytes at `data`, in file `path`) is BF16 or F32 as
// is, or U8/I8 with its F32 .qs sidecar `qs` (bytes at `qsData`, in `qsPath`;
// null when the container has none) in the int8-row or int4-g64 form. Throws
// k3::Error (Format, Unsupported) naming the file and tensor.
WeightView storedMatrixView(const TensorInfo& t, const void* data, const std::string& path,
                            const TensorInfo* qs, const void* qsData, const std::string& qsPath,
                            size_t O, size_t I);

// One MXFP4 matrix [O, I] of a routed expert: packed codes and ue8m0 scales
// (the expert's part tensors, checked by the caller).
WeightView mxfp4View(size_t O, size_t I, const void* packed, const void* scales);

// Bytes of `data` and of `scales` for the view's shape (what a kernel streams).
size_t weightDataBytes(const WeightView& w);
size_t weightScaleBytes(const WeightView& w);

// Throws k3::Error(Usage) naming `what` if the view is malformed (null data,
// missing scales, cols not a multiple of the format's group) or if [r0, r1) is
// not inside [0, rows].
void checkWeightView(const WeightView& w, size_t r0, size_t r1, const char* what);

// out[0..cols) = row `row` as f32. Scalar; for references and tests.
//   I8:    q * s[row]
//   I4:    (nibble - 8) * s[row, i/64]
//   MXFP4: E2M1[code] * ue8m0ToF32(s[row, i/32])   (exact product)
void dequantizeRow(const WeightView& w, size_t row, float* out);

}  // namespace k3::codec
