// The stored-form rule: widths, shapes and the sidecar name.
// Thread-safe: no shared mutable state.
#include "k3/codec/stored_form.h"

#include "k3/codec/quantize.h"

namespace k3::codec {

const char* storedFormName(StoredForm f) {
  switch (f) {
    case StoredForm::KeepFloat: return "kept float";
    case StoredForm::Int8Rows: return "int8 per-row";
    case StoredForm::Int4G64: return "int4-g64";
  }
  return "?";
}

int classBits(TensorClass cls, int bits, int mlaBits, int headBits) {
  switch (cls) {
    case TensorClass::Bits: return bits;
    case TensorClass::Mla: return mlaBits;
    case TensorClass::Head: return headBits;
    default: return 16;
  }
}

StoredForm storedFormFor(int bits, uint64_t inputs) {
  if (bits >= 16) return StoredForm::KeepFloat;
  if (bits <= 4 && inputs % kInt4Group == 0) return StoredForm::Int4G64;
  return StoredForm::Int8Rows;
}

std::string scaleSidecarName(std::string_view tensor) {
  std::string s(tensor);
  s += kScaleSidecarSuffix;
  return s;
}

StoredTensor storedData(StoredForm form, uint64_t O, uint64_t I) {
  if (form == StoredForm::Int4G64) return {Dtype::U8, {O, I / 2}};
  return {Dtype::U8, {O, I}};
}

StoredTensor storedScales(StoredForm form, uint64_t O, uint64_t I) {
  if (form == StoredForm::Int4G64) return {Dtype::F32, {O, I / kInt4Group}};
  return {Dtype::F32, {O}};
}

bool isStoredAs(StoredForm form, const TensorInfo& t, const TensorInfo& qs, uint64_t O, uint64_t I) {
  if (form == StoredForm::KeepFloat) return false;
  if (form == StoredForm::Int4G64 && I % kInt4Group != 0) return false;
  const StoredTensor data = storedData(form, O, I), scales = storedScales(form, O, I);
  const uint64_t bytes = data.shape[0] * data.shape[1];
  const uint64_t nScales = form == StoredForm::Int4G64 ? O * (I / kInt4Group) : O;
  return t.nbytes() == bytes && qs.numel() == nScales && t.shape == data.shape;
}

}  // namespace k3::codec
