#include "k3/format/model_config.h"

#include <simdjson.h>

#include <cmath>
#include <set>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3 {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

[[noreturn]] void bad(const std::string& path, std::string_view key, const std::string& what) {
  fail(ErrorKind::Config, path, ": key '", key, "': ", what);
}

std::optional<element> lookup(const object& obj, std::string_view key) {
  element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
  return e;
}

double asNumber(element e, const std::string& path, std::string_view key) {
  if (e.is_int64()) return static_cast<double>(e.get_int64().value_unsafe());
  if (e.is_uint64()) return static_cast<double>(e.get_uint64().value_unsafe());
  if (e.is_double()) return e.get_double().value_unsafe();
  bad(path, key, "is not a number");
}

int64_t asInteger(element e, const std::string& path, std::string_view key) {
  double v = asNumber(e, path, key);
  if (std::floor(v) != v || std::fabs(v) > 9.0e15) bad(path, key, "is not an integer");
  return static_cast<int64_t>(v);
}

int requireInt(const object& obj, std::string_view key, const std::string& path) {
  auto e = lookup(obj, key);
  if (!e) bad(path, key, "is missing");
  int64_t v = asInteger(*e, path, key);
  if (v < INT32_MIN || v > INT32_MAX) bad(path, key, "is out of range");
  return static_cast<int>(v);
}

int optionalInt(const object& obj, std::string_view key, int fallback, const std::string& path) {
  return lookup(obj, key) ? requireInt(obj, key, path) : fallback;
}

float optionalFloat(const object& obj, std::string_view key, float fallback, const std::string& path) {
  auto e = lookup(obj, key);
  return e ? static_cast<float>(asNumber(*e, path, key)) : fallback;
}

void readTokenIds(const object& root, const object& text, ModelConfig& c, const std::string& path) {
  auto pick = [&](std::string_view key) {
    auto e = lookup(root, key);
    return e ? e : lookup(text, key);
  };
  if (auto e = pick("bos_token_id")) c.bosTokenId = asInteger(*e, path, "bos_token_id");
  if (auto e = pick("eos_token_id")) {
    if (e->is_array()) {
      simdjson::dom::array ids = e->get_array().value_unsafe();
      for (auto v : ids) c.eosTokenIds.push_back(asInteger(v, path, "eos_token_id"));
    } else {
      c.eosTokenIds.push_back(asInteger(*e, path, "eos_token_id"));
    }
  }
}

// JSON allows a key twice and parsers keep the first or the last: which value
// k3 would read is then a guess, so a config with a repeated key is refused.
void refuseDuplicateKeys(element e, const std::string& path, const std::string& where) {
  object obj;
  simdjson::dom::array arr;
  if (e.get_object().get(obj) == simdjson::SUCCESS) {
    std::set<std::string_view> seen;
    for (auto field : obj) {
      const std::string key = where.empty() ? std::string(field.key) : where + "." + std::string(field.key);
      if (!seen.insert(field.key).second) fail(ErrorKind::Config, path, ": key '", key, "' appears twice");
      refuseDuplicateKeys(field.value, path, key);
    }
  } else if (e.get_array().get(arr) == simdjson::SUCCESS) {
    for (auto v : arr) refuseDuplicateKeys(v, path, where);
  }
}

void check(bool ok, const std::string& path, std::string_view key, const std::string& what) {
  if (!ok) bad(path, key, what);
}

void validate(const ModelConfig& c, const std::string& path) {
  check(c.hiddenSize >= 1 && c.hiddenSize <= 65536, path, "hidden_size", "must be in [1, 65536]");
  check(c.numLayers >= 1 && c.numLayers <= kMaxLayers, path, "num_hidden_layers", cat("must be in [1, ", kMaxLayers, "]"));
  check(c.vocabSize >= 1 && c.vocabSize <= (1 << 22), path, "vocab_size", "must be in [1, 2^22]");
  check(c.numExperts >= 1 && c.numExperts <= kMaxExperts, path, "num_experts", cat("must be in [1, ", kMaxExperts, "]"));
  check(c.numExpertsPerToken >= 1 && c.numExpertsPerToken <= std::min(64, c.numExperts), path,
        "num_experts_per_token", "must be in [1, min(64, num_experts)]");
  check(c.kdaProjDim() >= 1 && c.kdaProjDim() <= (1 << 20), path, "linear_attn_config",
        "num_heads*head_dim must be in [1, 2^20]");
  check(c.kdaHeadDim >= 1 && c.kdaHeadDim <= 512, path, "linear_attn_config.head_dim", "must be in [1, 512]");
  check(c.kdaConvKernel >= 1 && c.kdaConvKernel <= 8, path, "linear_attn_config.short_conv_kernel_size",
        "must be in [1, 8]");
  check(c.latentSize >= 32 && c.latentSize % 32 == 0, path, "routed_expert_hidden_size",
        "must be a multiple of 32, at least 32");
  check(c.moeIntermediateSize >= 32 && c.moeIntermediateSize % 32 == 0, path, "moe_intermediate_size",
        "must be a multiple of 32, at least 32");
  check(c.attnResBlockSize >= 1, path, "attn_res_block_size", "must be at least 1");
  check(c.numAttnResBlocks() + 1 <= 16, path, "attn_res_block_size",
        "gives more than 15 AttnRes blocks");
  check(c.kvLoraRank >= 1 && c.kvLoraRank <= 4096, path, "kv_lora_rank", "must be in [1, 4096]");
  check(c.numAttentionHeads >= 1 && c.qLoraRank >= 1 && c.qkNopeHeadDim >= 1 && c.qkRopeHeadDim >= 0 &&
            c.vHeadDim >= 1,
        path, "num_attention_heads", "MLA dimensions must be positive");
  check(c.firstKDenseReplace >= 0 && c.firstKDenseReplace <= c.numLayers, path, "first_k_dense_replace",
        "must be in [0, num_hidden_layers]");
  check(c.firstKDenseReplace == 0 || c.intermediateSize >= 1, path, "intermediate_size",
        "must be positive when there are dense layers");
  check(c.numSharedExperts >= 0, path, "num_shared_experts", "must not be negative");
  for (int l : c.kdaLayers)
    check(l >= 1 && l <= c.numLayers, path, "linear_attn_config.kda_layers",
          cat("entry ", l, " is outside 1..", c.numLayers));
}

}  // namespace

int ModelConfig::numAttnResBlocks() const {
  return attnResBlockSize > 0 ? (numLayers + attnResBlockSize - 1) / attnResBlockSize : 0;
}

bool ModelConfig::isKdaLayer(int layer) const {
  for (int l : kdaLayers)
    if (l == layer + 1) return true;
  return false;
}

ModelConfig ModelConfig::parse(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  element rootEl;
  auto err = parser.parse(json.data(), json.size(), true).get(rootEl);
  if (err) fail(ErrorKind::Config, path, ": not valid JSON (", simdjson::error_message(err), ")");
  object root;
  if (rootEl.get_object().get(root) != simdjson::SUCCESS)
    fail(ErrorKind::Config, path, ": not a JSON object");
  refuseDuplicateKeys(rootEl, path, "");
  object text = root;
  if (auto tc = lookup(root, "text_config"); tc && tc->is_object()) text = tc->get_object().value_unsafe();

  ModelConfig c;
  if (auto mt = lookup(root, "model_type"); mt && mt->is_string())
    c.modelType = std::string(mt->get_string().value_unsafe());
  c.hiddenSize = requireInt(text, "hidden_size", path);
  c.numLayers = requireInt(text, "num_hidden_layers", path);
  c.vocabSize = requireInt(text, "vocab_size", path);
  c.firstKDenseReplace = optionalInt(text, "first_k_dense_replace", 1, path);
  c.intermediateSize = optionalInt(text, "intermediate_size", 0, path);
  c.numAttentionHeads = requireInt(text, "num_attention_heads", path);
  c.qLoraRank = requireInt(text, "q_lora_rank", path);
  c.kvLoraRank = requireInt(text, "kv_lora_rank", path);
  c.qkNopeHeadDim = requireInt(text, "qk_nope_head_dim", path);
  c.qkRopeHeadDim = requireInt(text, "qk_rope_head_dim", path);
  c.vHeadDim = requireInt(text, "v_head_dim", path);
  c.numExperts = requireInt(text, "num_experts", path);
  c.numExpertsPerToken = requireInt(text, "num_experts_per_token", path);
  c.moeIntermediateSize = requireInt(text, "moe_intermediate_size", path);
  c.latentSize = requireInt(text, "routed_expert_hidden_size", path);
  c.numSharedExperts = optionalInt(text, "num_shared_experts", 0, path);
  c.attnResBlockSize = requireInt(text, "attn_res_block_size", path);
  c.situBeta = optionalFloat(text, "activation_situ_beta", 4.0f, path);
  c.situLinearBeta = optionalFloat(text, "activation_situ_linear_beta", 25.0f, path);
  c.rmsNormEps = optionalFloat(text, "rms_norm_eps", 1e-5f, path);
  if (auto e = lookup(text, "max_position_embeddings")) {
    c.maxPositionEmbeddings = asInteger(*e, path, "max_position_embeddings");
    if (c.maxPositionEmbeddings < 1) bad(path, "max_position_embeddings", "must be at least 1");
  }

  auto lac = lookup(text, "linear_attn_config");
  if (!lac || !lac->is_object()) bad(path, "linear_attn_config", "is missing or not an object");
  object kda = lac->get_object().value_unsafe();
  c.kdaNumHeads = requireInt(kda, "num_heads", path);
  c.kdaHeadDim = requireInt(kda, "head_dim", path);
  c.kdaConvKernel = requireInt(kda, "short_conv_kernel_size", path);
  c.kdaGateLowerBound = optionalFloat(kda, "gate_lower_bound", -5.0f, path);
  auto layers = lookup(kda, "kda_layers");
  if (!layers || !layers->is_array()) bad(path, "linear_attn_config.kda_layers", "is missing or not an array");
  simdjson::dom::array layerList = layers->get_array().value_unsafe();
  for (auto v : layerList)
    c.kdaLayers.push_back(static_cast<int>(asInteger(v, path, "linear_attn_config.kda_layers")));

  readTokenIds(root, text, c, path);
  validate(c, path);
  return c;
}

ModelConfig ModelConfig::load(const std::string& path) {
  return parse(readInputFile(path, kConfigInput), path);
}

}  // namespace k3
