// What the K3 checkpoint holds, derived from ModelConfig (spec §2) and how
// each source tensor is treated by the converter (spec §5.1–5.2).
// Thread-safety: pure functions of the config; safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "k3/format/model_config.h"

namespace k3 {

constexpr std::string_view kLanguageModelPrefix = "language_model.";

// The prefix every text tensor of a checkpoint or container carries (spec
// §2.1, the peer's rule): kLanguageModelPrefix when layer 0's input norm is
// found only with it, else "". `has(name)` says whether a tensor is there.
std::string languageModelPrefix(const std::function<bool(const std::string&)>& has);

// Spec §5.1 classes. Bits/Mla/Head are quantized with the bit width of their
// class (spec §5.2); Pass is copied byte for byte; Expert is copied byte for
// byte in expert-id order; Skip (vision) is dropped.
enum class TensorClass { Skip, Expert, Pass, Bits, Mla, Head };
const char* tensorClassName(TensorClass c);

// Classifies a source tensor name (with or without the language_model. prefix).
TensorClass classifyTensor(std::string_view name, const ModelConfig& cfg);

// The six MXFP4 tensors of one expert, in container order.
enum class ExpertPart { W1Packed, W1Scale, W2Packed, W2Scale, W3Packed, W3Scale };
constexpr int kExpertParts = 6;
// "{prefix}model.layers.{layer}.block_sparse_moe.experts.{id}.w1.weight_packed", ...
std::string expertTensorName(std::string_view prefix, int layer, int expert, ExpertPart part);
// Logical U8 shape of a part: packed [O, I/2], scale [O, I/32]; W1/W3 are
// [moe_inter, latent], W2 is [latent, moe_inter].
std::vector<uint64_t> expertPartShape(const ModelConfig& cfg, ExpertPart part);
uint64_t expertBytes(const ModelConfig& cfg);  // all six parts

struct ExpertName {
  int layer = -1;
  int expert = -1;
  ExpertPart part = ExpertPart::W1Packed;
};
// Parses an expert tensor name; false if `name` is not one.
bool parseExpertName(std::string_view name, ExpertName& out);

// Every non-expert text tensor the config implies, with its logical shape and
// class (name includes `prefix`). Source dtypes are F32 for A_log, dt_bias,
// conv taps, o_norm, e_score_correction_bias and BF16 for the rest (spec §2.1).
struct ExpectedTensor {
  std::string name;
  std::vector<uint64_t> shape;
  TensorClass cls;
  bool sourceF32 = false;
};
std::vector<ExpectedTensor> expectedDenseTensors(const ModelConfig& cfg, std::string_view prefix);

}  // namespace k3
