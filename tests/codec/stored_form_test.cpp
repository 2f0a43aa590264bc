// The stored-form rule (spec §5.2–5.5): which form a bit width gives, the
// shapes and dtypes each form stores, the sidecar name, and the views built
// from stored tensors (with the opener's messages for what does not fit).
#include "k3/codec/stored_form.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "k3/codec/weight_view.h"
#include "k3/io/error.h"

using namespace k3::codec;
using k3::Dtype;
using k3::TensorClass;
using k3::TensorInfo;

namespace {

TensorInfo tensor(const std::string& name, Dtype d, std::vector<uint64_t> shape, uint64_t bytes) {
  TensorInfo t;
  t.name = name;
  t.dtype = d;
  t.shape = std::move(shape);
  t.begin = 0;
  t.end = bytes;
  return t;
}

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const k3::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(StoredForm, BitWidthAndInputsChooseTheForm) {
  EXPECT_EQ(storedFormFor(16, 128), StoredForm::KeepFloat);
  EXPECT_EQ(storedFormFor(8, 128), StoredForm::Int8Rows);
  EXPECT_EQ(storedFormFor(4, 128), StoredForm::Int4G64);
  EXPECT_EQ(storedFormFor(4, 96), StoredForm::Int8Rows);  // 96 % 64 != 0: int8 instead
  EXPECT_EQ(storedFormFor(4, 64), StoredForm::Int4G64);
  EXPECT_STREQ(storedFormName(StoredForm::KeepFloat), "kept float");
  EXPECT_STREQ(storedFormName(StoredForm::Int8Rows), "int8 per-row");
  EXPECT_STREQ(storedFormName(StoredForm::Int4G64), "int4-g64");
}

TEST(StoredForm, EachClassHasItsOwnWidth) {
  EXPECT_EQ(classBits(TensorClass::Bits, 4, 8, 16), 4);
  EXPECT_EQ(classBits(TensorClass::Mla, 4, 8, 16), 8);
  EXPECT_EQ(classBits(TensorClass::Head, 4, 8, 16), 16);
  EXPECT_EQ(classBits(TensorClass::Pass, 4, 8, 8), 16);
  EXPECT_EQ(classBits(TensorClass::Expert, 4, 4, 4), 16);
}

TEST(StoredForm, ShapesDtypesAndSidecarName) {
  const StoredTensor d8 = storedData(StoredForm::Int8Rows, 3, 128), s8 = storedScales(StoredForm::Int8Rows, 3, 128);
  EXPECT_EQ(d8.dtype, Dtype::U8);
  EXPECT_EQ(d8.shape, (std::vector<uint64_t>{3, 128}));
  EXPECT_EQ(s8.dtype, Dtype::F32);
  EXPECT_EQ(s8.shape, (std::vector<uint64_t>{3}));
  const StoredTensor d4 = storedData(StoredForm::Int4G64, 3, 128), s4 = storedScales(StoredForm::Int4G64, 3, 128);
  EXPECT_EQ(d4.dtype, Dtype::U8);
  EXPECT_EQ(d4.shape, (std::vector<uint64_t>{3, 64}));
  EXPECT_EQ(s4.dtype, Dtype::F32);
  EXPECT_EQ(s4.shape, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(scaleSidecarName("model.layers.0.mlp.up_proj.weight"), "model.layers.0.mlp.up_proj.weight.qs");
}

TEST(StoredForm, IsStoredAsMatchesOnlyItsOwnTensors) {
  const TensorInfo q8 = tensor("w", Dtype::U8, {3, 128}, 3 * 128), qs8 = tensor("w.qs", Dtype::F32, {3}, 12);
  const TensorInfo q4 = tensor("w", Dtype::U8, {3, 64}, 3 * 64), qs4 = tensor("w.qs", Dtype::F32, {3, 2}, 24);
  EXPECT_TRUE(isStoredAs(StoredForm::Int8Rows, q8, qs8, 3, 128));
  EXPECT_FALSE(isStoredAs(StoredForm::Int4G64, q8, qs8, 3, 128));
  EXPECT_TRUE(isStoredAs(StoredForm::Int4G64, q4, qs4, 3, 128));
  EXPECT_FALSE(isStoredAs(StoredForm::Int8Rows, q4, qs4, 3, 128));
  EXPECT_FALSE(isStoredAs(StoredForm::Int4G64, q4, qs4, 3, 96));  // int4 needs I % 64 == 0
  EXPECT_FALSE(isStoredAs(StoredForm::KeepFloat, q8, qs8, 3, 128));
}

TEST(StoredForm, MatrixViewsOfEveryStoredForm) {
  const uint8_t bytes[4096] = {};
  const TensorInfo bf = tensor("w", Dtype::BF16, {3, 128}, 3 * 128 * 2);
  WeightView v = storedMatrixView(bf, bytes, "s.safetensors", nullptr, nullptr, "", 3, 128);
  EXPECT_EQ(v.format, WeightFormat::BF16);
  EXPECT_EQ(v.rows, 3u);
  EXPECT_EQ(v.cols, 128u);
  EXPECT_EQ(v.data, bytes);
  EXPECT_EQ(v.scales, nullptr);
  const TensorInfo q4 = tensor("w", Dtype::U8, {3, 64}, 3 * 64), qs4 = tensor("w.qs", Dtype::F32, {3, 2}, 24);
  v = storedMatrixView(q4, bytes, "s.safetensors", &qs4, bytes + 1024, "s.safetensors", 3, 128);
  EXPECT_EQ(v.format, WeightFormat::I4G64);
  EXPECT_EQ(v.scales, bytes + 1024);
  const TensorInfo q8 = tensor("w", Dtype::I8, {3, 128}, 3 * 128), qs8 = tensor("w.qs", Dtype::F32, {3}, 12);
  EXPECT_EQ(storedMatrixView(q8, bytes, "s", &qs8, bytes, "s", 3, 128).format, WeightFormat::I8Row);
  const WeightView mx = mxfp4View(4, 64, bytes, bytes + 8);
  EXPECT_EQ(mx.format, WeightFormat::MXFP4);
  EXPECT_EQ(mx.scales, bytes + 8);
}

TEST(StoredForm, MatrixViewRefusalsNameTheFileAndTensor) {
  const uint8_t bytes[64] = {};
  const TensorInfo q8 = tensor("w", Dtype::U8, {3, 128}, 3 * 128);
  EXPECT_EQ(messageOf([&] { storedMatrixView(q8, bytes, "a.safetensors", nullptr, nullptr, "", 3, 128); }),
            "a.safetensors: tensor 'w' is U8 without its '.qs' scale sidecar (untrusted container)");
  const TensorInfo qsBf = tensor("w.qs", Dtype::BF16, {3}, 6);
  EXPECT_EQ(messageOf([&] { storedMatrixView(q8, bytes, "a.safetensors", &qsBf, bytes, "b.safetensors", 3, 128); }),
            "b.safetensors: tensor 'w.qs' must be F32, is BF16");
  const TensorInfo qs = tensor("w.qs", Dtype::F32, {5}, 20);
  EXPECT_EQ(messageOf([&] { storedMatrixView(q8, bytes, "a.safetensors", &qs, bytes, "a.safetensors", 3, 128); }),
            "a.safetensors: tensor 'w' has shape [3,128] and 5 scales; expected int8 [3,128] with 3 scales or "
            "int4-g64 [3,64] with 6 scales");
  const TensorInfo bf = tensor("w", Dtype::BF16, {4, 128}, 4 * 128 * 2);
  EXPECT_EQ(messageOf([&] { storedMatrixView(bf, bytes, "a.safetensors", nullptr, nullptr, "", 3, 128); }),
            "a.safetensors: tensor 'w' has shape [4,128], expected [3,128]");
  const TensorInfo f16 = tensor("w", Dtype::F16, {3, 128}, 3 * 128 * 2);
  EXPECT_EQ(messageOf([&] { storedMatrixView(f16, bytes, "a.safetensors", nullptr, nullptr, "", 3, 128); }),
            "a.safetensors: tensor 'w' has dtype F16; matrices must be BF16, F32 or a quantized U8/I8 + .qs");
}
