#include "k3/format/tensor_inventory.h"

#include <array>
#include <charconv>

#include "k3/io/error.h"

namespace k3 {

std::string languageModelPrefix(const std::function<bool(const std::string&)>& has) {
  const std::string probe = "model.layers.0.input_layernorm.weight";
  if (!has(probe) && has(std::string(kLanguageModelPrefix) + probe)) return std::string(kLanguageModelPrefix);
  return std::string();
}

namespace {

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::vector<std::string_view> splitDots(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool parseInt(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

constexpr std::array<std::string_view, 6> kPartSuffix{
    "w1.weight_packed", "w1.weight_scale", "w2.weight_packed",
    "w2.weight_scale",  "w3.weight_packed", "w3.weight_scale"};

}  // namespace

const char* tensorClassName(TensorClass c) {
  switch (c) {
    case TensorClass::Skip: return "skip";
    case TensorClass::Expert: return "expert";
    case TensorClass::Pass: return "pass";
    case TensorClass::Bits: return "bits";
    case TensorClass::Mla: return "mla";
    case TensorClass::Head: return "head";
  }
  return "?";
}

// Spec §5.1, rule by rule.
TensorClass classifyTensor(std::string_view name, const ModelConfig& cfg) {
  if (startsWith(name, "vision_tower") || startsWith(name, "mm_projector")) return TensorClass::Skip;
  std::string_view n = name;
  if (startsWith(n, kLanguageModelPrefix)) n.remove_prefix(kLanguageModelPrefix.size());
  if (n.find(".block_sparse_moe.experts.") != std::string_view::npos) return TensorClass::Expert;
  if (n == "lm_head.weight") return TensorClass::Head;
  auto parts = splitDots(n);
  int layer = -1;
  if (parts.size() > 3 && parts[1] == "layers" && !parseInt(parts[2], layer)) layer = -1;
  if (n.find(".self_attn.") != std::string_view::npos && endsWith(n, ".weight")) {
    std::string_view leaf = parts[parts.size() - 2];
    if (leaf == "q_a_proj" || leaf == "q_b_proj" || leaf == "kv_a_proj_with_mqa" || leaf == "kv_b_proj")
      return TensorClass::Mla;
    if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") return TensorClass::Bits;
    if (leaf == "o_proj" || leaf == "g_proj")
      return (layer >= 0 && cfg.isKdaLayer(layer)) ? TensorClass::Bits : TensorClass::Mla;
    return TensorClass::Pass;
  }
  for (std::string_view suffix :
       {"routed_expert_down_proj.weight", "routed_expert_up_proj.weight",
        "shared_experts.gate_proj.weight", "shared_experts.up_proj.weight",
        "shared_experts.down_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
        "mlp.down_proj.weight"})
    if (endsWith(n, suffix)) return TensorClass::Bits;
  return TensorClass::Pass;
}

std::string expertTensorName(std::string_view prefix, int layer, int expert, ExpertPart part) {
  return cat(prefix, "model.layers.", layer, ".block_sparse_moe.experts.", expert, ".",
             kPartSuffix[static_cast<size_t>(part)]);
}

std::vector<uint64_t> expertPartShape(const ModelConfig& cfg, ExpertPart part) {
  const uint64_t inter = static_cast<uint64_t>(cfg.moeIntermediateSize);
  const uint64_t latent = static_cast<uint64_t>(cfg.latentSize);
  const bool down = part == ExpertPart::W2Packed || part == ExpertPart::W2Scale;
  const uint64_t rows = down ? latent : inter, cols = down ? inter : latent;
  const bool scale = part == ExpertPart::W1Scale || part == ExpertPart::W2Scale ||
                     part == ExpertPart::W3Scale;
  return {rows, scale ? cols / 32 : cols / 2};
}

uint64_t expertBytes(const ModelConfig& cfg) {
  uint64_t total = 0;
  for (int p = 0; p < kExpertParts; ++p) {
    auto s = expertPartShape(cfg, static_cast<ExpertPart>(p));
    total += s[0] * s[1];
  }
  return total;
}

bool parseExpertName(std::string_view name, ExpertName& out) {
  std::string_view n = name;
  if (startsWith(n, kLanguageModelPrefix)) n.remove_prefix(kLanguageModelPrefix.size());
  // model.layers.{L}.block_sparse_moe.experts.{E}.w{1,2,3}.weight_{packed,scale}
  auto parts = splitDots(n);
  if (parts.size() != 8 || parts[0] != "model" || parts[1] != "layers" ||
      parts[3] != "block_sparse_moe" || parts[4] != "experts")
    return false;
  ExpertName e;
  if (!parseInt(parts[2], e.layer) || !parseInt(parts[5], e.expert) || e.layer < 0 || e.expert < 0)
    return false;
  std::string tail = cat(parts[6], ".", parts[7]);
  for (size_t p = 0; p < kPartSuffix.size(); ++p) {
    if (tail == kPartSuffix[p]) {
      e.part = static_cast<ExpertPart>(p);
      out = e;
      return true;
    }
  }
  return false;
}

std::vector<ExpectedTensor> expectedDenseTensors(const ModelConfig& cfg, std::string_view prefix) {
  using U = uint64_t;
  const U D = static_cast<U>(cfg.hiddenSize), V = static_cast<U>(cfg.vocabSize);
  std::vector<ExpectedTensor> out;
  auto add = [&](std::string name, std::vector<U> shape, TensorClass cls, bool f32 = false) {
    out.push_back({cat(prefix, name), std::move(shape), cls, f32});
  };
  add("model.embed_tokens.weight", {V, D}, TensorClass::Pass);
  for (int i = 0; i < cfg.numLayers; ++i) {
    const std::string l = cat("model.layers.", i, ".");
    add(l + "input_layernorm.weight", {D}, TensorClass::Pass);
    add(l + "post_attention_layernorm.weight", {D}, TensorClass::Pass);
    add(l + "self_attention_res_norm.weight", {D}, TensorClass::Pass);
    add(l + "self_attention_res_proj.weight", {1, D}, TensorClass::Pass);
    add(l + "mlp_res_norm.weight", {D}, TensorClass::Pass);
    add(l + "mlp_res_proj.weight", {1, D}, TensorClass::Pass);
    const std::string a = l + "self_attn.";
    if (cfg.isKdaLayer(i)) {
      const U P = static_cast<U>(cfg.kdaProjDim()), hd = static_cast<U>(cfg.kdaHeadDim);
      const U H = static_cast<U>(cfg.kdaNumHeads), K = static_cast<U>(cfg.kdaConvKernel);
      for (const char* p : {"q_proj", "k_proj", "v_proj", "g_proj"})
        add(a + p + ".weight", {P, D}, TensorClass::Bits);
      add(a + "o_proj.weight", {D, P}, TensorClass::Bits);
      for (const char* p : {"q_conv1d", "k_conv1d", "v_conv1d"})
        add(a + p + ".weight", {P, 1, K}, TensorClass::Pass, true);
      add(a + "f_a_proj.weight", {hd, D}, TensorClass::Pass);
      add(a + "f_b_proj.weight", {P, hd}, TensorClass::Pass);
      add(a + "b_proj.weight", {H, D}, TensorClass::Pass);
      add(a + "dt_bias", {P}, TensorClass::Pass, true);
      add(a + "A_log", {H}, TensorClass::Pass, true);  // may be zero-padded: numel >= H
      add(a + "o_norm.weight", {hd}, TensorClass::Pass, true);
    } else {
      const U H = static_cast<U>(cfg.numAttentionHeads), qr = static_cast<U>(cfg.qLoraRank);
      const U kvr = static_cast<U>(cfg.kvLoraRank), rope = static_cast<U>(cfg.qkRopeHeadDim);
      const U nope = static_cast<U>(cfg.qkNopeHeadDim), vd = static_cast<U>(cfg.vHeadDim);
      add(a + "q_a_proj.weight", {qr, D}, TensorClass::Mla);
      add(a + "q_a_layernorm.weight", {qr}, TensorClass::Pass);
      add(a + "q_b_proj.weight", {H * (nope + rope), qr}, TensorClass::Mla);
      add(a + "kv_a_proj_with_mqa.weight", {kvr + rope, D}, TensorClass::Mla);
      add(a + "kv_a_layernorm.weight", {kvr}, TensorClass::Pass);
      add(a + "kv_b_proj.weight", {H * (nope + vd), kvr}, TensorClass::Mla);
      add(a + "o_proj.weight", {D, H * vd}, TensorClass::Mla);
      add(a + "g_proj.weight", {H * vd, D}, TensorClass::Mla);
    }
    if (!cfg.isMoeLayer(i)) {
      const U Id = static_cast<U>(cfg.intermediateSize);
      add(l + "mlp.gate_proj.weight", {Id, D}, TensorClass::Bits);
      add(l + "mlp.up_proj.weight", {Id, D}, TensorClass::Bits);
      add(l + "mlp.down_proj.weight", {D, Id}, TensorClass::Bits);
    } else {
      const std::string m = l + "block_sparse_moe.";
      const U E = static_cast<U>(cfg.numExperts), lat = static_cast<U>(cfg.latentSize);
      add(m + "gate.weight", {E, D}, TensorClass::Pass);
      add(m + "gate.e_score_correction_bias", {E}, TensorClass::Pass, true);
      add(m + "routed_expert_down_proj.weight", {lat, D}, TensorClass::Bits);
      add(m + "routed_expert_up_proj.weight", {D, lat}, TensorClass::Bits);
      add(m + "routed_expert_norm.weight", {lat}, TensorClass::Pass);
      if (cfg.numSharedExperts > 0) {
        const U Ish = static_cast<U>(cfg.sharedIntermediate());
        add(m + "shared_experts.gate_proj.weight", {Ish, D}, TensorClass::Bits);
        add(m + "shared_experts.up_proj.weight", {Ish, D}, TensorClass::Bits);
        add(m + "shared_experts.down_proj.weight", {D, Ish}, TensorClass::Bits);
      }
    }
  }
  add("model.norm.weight", {D}, TensorClass::Pass);
  add("model.output_attn_res_norm.weight", {D}, TensorClass::Pass);
  add("model.output_attn_res_proj.weight", {1, D}, TensorClass::Pass);
  add("lm_head.weight", {V, D}, TensorClass::Head);
  return out;
}

}  // namespace k3
