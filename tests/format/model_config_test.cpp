// ModelConfig and the tensor inventory checked against the numbers the spec
// gives for the real K3 checkpoint (spec §1.2, §2.7, §2.10).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "k3/format/model_config.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"

namespace {

std::string kdaLayersJson() {
  std::string s = "[";
  bool first = true;
  for (int i = 1; i <= 91; ++i) {
    if (i % 4 == 0) continue;
    if (!first) s += ',';
    s += std::to_string(i);
    first = false;
  }
  return s + "]";
}

std::string realK3Config() {
  return std::string(R"({"model_type":"kimi_k3","bos_token_id":163584,"eos_token_id":163586,
    "text_config":{"model_type":"kimi_linear","hidden_size":7168,"num_hidden_layers":93,
    "vocab_size":163840,"first_k_dense_replace":1,"intermediate_size":33792,
    "num_attention_heads":96,"q_lora_rank":1536,"kv_lora_rank":512,"qk_nope_head_dim":128,
    "qk_rope_head_dim":64,"v_head_dim":128,"num_experts":896,"num_experts_per_token":16,
    "moe_intermediate_size":3072,"routed_expert_hidden_size":3584,"num_shared_experts":2,
    "attn_res_block_size":12,"activation_situ_beta":4,"activation_situ_linear_beta":25,
    "rms_norm_eps":1e-05,"bos_token_id":1,"eos_token_id":[7,8],
    "linear_attn_config":{"num_heads":96,"head_dim":128,"short_conv_kernel_size":4,
    "gate_lower_bound":-5.0,"use_full_rank_gate":true,"kda_layers":)") +
         kdaLayersJson() + "}}}";
}

}  // namespace

TEST(ModelConfig, ReadsRealK3ValuesWithTextConfigNesting) {
  auto c = k3::ModelConfig::parse(realK3Config(), "config.json");
  EXPECT_EQ(c.modelType, "kimi_k3");
  EXPECT_EQ(c.hiddenSize, 7168);
  EXPECT_EQ(c.numLayers, 93);
  EXPECT_EQ(c.kdaProjDim(), 12288);
  EXPECT_EQ(c.mlaQkHeadDim(), 192);
  EXPECT_EQ(c.sharedIntermediate(), 6144);
  EXPECT_EQ(c.numAttnResBlocks(), 8);
  EXPECT_FLOAT_EQ(c.rmsNormEps, 1e-5f);
  // bos/eos: root wins over text_config.
  ASSERT_TRUE(c.bosTokenId.has_value());
  EXPECT_EQ(*c.bosTokenId, 163584);
  ASSERT_EQ(c.eosTokenIds.size(), 1u);
  EXPECT_EQ(c.eosTokenIds[0], 163586);
  int kda = 0;
  for (int i = 0; i < 93; ++i) kda += c.isKdaLayer(i);
  EXPECT_EQ(kda, 69);
  EXPECT_FALSE(c.isKdaLayer(3));   // 1-based 4 is MLA
  EXPECT_FALSE(c.isKdaLayer(92));  // the final layer is MLA
  EXPECT_TRUE(c.isKdaLayer(0));
  EXPECT_FALSE(c.isMoeLayer(0));
  EXPECT_TRUE(c.isMoeLayer(1));
}

TEST(TensorInventory, MatchesTheRealCheckpointCounts) {
  auto c = k3::ModelConfig::parse(realK3Config(), "config.json");
  auto dense = k3::expectedDenseTensors(c, k3::kLanguageModelPrefix);
  // Spec §2.7: 2,628 non-expert tensors, of which 168 are vision.
  EXPECT_EQ(dense.size(), 2628u - 168u);
  EXPECT_EQ(k3::expertBytes(c), 17'547'264u);
  EXPECT_EQ(dense.front().name, "language_model.model.embed_tokens.weight");
  EXPECT_EQ(dense.back().name, "language_model.lm_head.weight");
}

TEST(TensorInventory, ClassifiesPerSpec51) {
  auto c = k3::ModelConfig::parse(realK3Config(), "config.json");
  using k3::TensorClass;
  auto cls = [&](const char* n) { return k3::classifyTensor(n, c); };
  EXPECT_EQ(cls("vision_tower.blocks.0.wqkv.weight"), TensorClass::Skip);
  EXPECT_EQ(cls("mm_projector.proj.0.weight"), TensorClass::Skip);
  EXPECT_EQ(cls("language_model.model.layers.5.block_sparse_moe.experts.12.w2.weight_scale"),
            TensorClass::Expert);
  EXPECT_EQ(cls("language_model.lm_head.weight"), TensorClass::Head);
  EXPECT_EQ(cls("lm_head.weight"), TensorClass::Head);
  EXPECT_EQ(cls("language_model.model.layers.3.self_attn.q_b_proj.weight"), TensorClass::Mla);
  EXPECT_EQ(cls("language_model.model.layers.0.self_attn.q_proj.weight"), TensorClass::Bits);
  EXPECT_EQ(cls("language_model.model.layers.0.self_attn.o_proj.weight"), TensorClass::Bits);
  EXPECT_EQ(cls("language_model.model.layers.3.self_attn.o_proj.weight"), TensorClass::Mla);
  EXPECT_EQ(cls("language_model.model.layers.92.self_attn.g_proj.weight"), TensorClass::Mla);
  EXPECT_EQ(cls("language_model.model.layers.0.self_attn.q_conv1d.weight"), TensorClass::Pass);
  EXPECT_EQ(cls("language_model.model.layers.3.self_attn.kv_a_layernorm.weight"), TensorClass::Pass);
  EXPECT_EQ(cls("language_model.model.layers.0.mlp.down_proj.weight"), TensorClass::Bits);
  EXPECT_EQ(cls("language_model.model.layers.9.block_sparse_moe.shared_experts.up_proj.weight"),
            TensorClass::Bits);
  EXPECT_EQ(cls("language_model.model.layers.9.block_sparse_moe.gate.weight"), TensorClass::Pass);
  EXPECT_EQ(cls("language_model.model.embed_tokens.weight"), TensorClass::Pass);
  EXPECT_EQ(cls("language_model.model.layers.0.self_attn.dt_bias"), TensorClass::Pass);
}

TEST(TensorInventory, ExpertNamesRoundTrip) {
  auto name = k3::expertTensorName("language_model.", 7, 123, k3::ExpertPart::W3Scale);
  EXPECT_EQ(name, "language_model.model.layers.7.block_sparse_moe.experts.123.w3.weight_scale");
  k3::ExpertName e;
  ASSERT_TRUE(k3::parseExpertName(name, e));
  EXPECT_EQ(e.layer, 7);
  EXPECT_EQ(e.expert, 123);
  EXPECT_EQ(e.part, k3::ExpertPart::W3Scale);
  EXPECT_FALSE(k3::parseExpertName("model.layers.7.block_sparse_moe.experts.x.w3.weight_scale", e));
  EXPECT_FALSE(k3::parseExpertName("model.layers.7.block_sparse_moe.gate.weight", e));
}

TEST(ModelConfig, RejectsMissingAndInvalidKeysNamingThem) {
  auto expectConfigError = [](const std::string& json, const std::string& needle) {
    try {
      k3::ModelConfig::parse(json, "snap/config.json");
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const k3::Error& e) {
      EXPECT_EQ(e.kind(), k3::ErrorKind::Config);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("snap/config.json"), std::string::npos);
    }
  };
  std::string good = realK3Config();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectConfigError(replace("\"hidden_size\":7168,", ""), "hidden_size");
  expectConfigError(replace("\"num_experts_per_token\":16", "\"num_experts_per_token\":1000"),
                    "num_experts_per_token");
  expectConfigError(replace("\"routed_expert_hidden_size\":3584", "\"routed_expert_hidden_size\":3585"),
                    "routed_expert_hidden_size");
  expectConfigError(replace("\"kda_layers\":[1,", "\"kda_layers\":[0,"), "kda_layers");
  expectConfigError(replace("\"vocab_size\":163840", "\"vocab_size\":\"big\""), "vocab_size");
  expectConfigError("{not json", "not valid JSON");
}

namespace {
std::string errorOf(const std::string& json) {
  try {
    k3::ModelConfig::parse(json, "config.json");
  } catch (const k3::Error& e) {
    EXPECT_EQ(e.kind(), k3::ErrorKind::Config);
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(ModelConfig, AKeyTwiceIsRefusedWhereverItIs) {
  std::string cfg = realK3Config();
  EXPECT_EQ(errorOf(cfg), "no error");
  // The first key of text_config repeated; at the root; inside an object in an array.
  std::string inText = cfg;
  inText.insert(inText.find("\"text_config\":{") + 15, "\"hidden_size\":1,");
  EXPECT_EQ(errorOf(inText), "config.json: key 'text_config.hidden_size' appears twice");
  EXPECT_EQ(errorOf("{\"model_type\":\"a\",\"model_type\":\"b\"," + cfg.substr(1)),
            "config.json: key 'model_type' appears twice");
  EXPECT_EQ(errorOf(cfg.substr(0, cfg.size() - 1) + ",\"extra\":[{\"k\":1,\"k\":2}]}"),
            "config.json: key 'extra.k' appears twice");
}

TEST(ModelConfig, MaxPositionEmbeddingsIsReadAndChecked) {
  std::string cfg = realK3Config();
  EXPECT_EQ(k3::ModelConfig::parse(cfg, "config.json").maxPositionEmbeddings, 0);  // absent: no limit
  auto with = [&](const std::string& v) {
    std::string c = cfg;
    c.insert(c.find("\"text_config\":{") + 15, "\"max_position_embeddings\":" + v + ",");
    return c;
  };
  EXPECT_EQ(k3::ModelConfig::parse(with("1048576"), "config.json").maxPositionEmbeddings, 1048576);
  EXPECT_EQ(errorOf(with("0")), "config.json: key 'max_position_embeddings': must be at least 1");
  EXPECT_EQ(errorOf(with("-4")), "config.json: key 'max_position_embeddings': must be at least 1");
  EXPECT_EQ(errorOf(with("\"big\"")), "config.json: key 'max_position_embeddings': is not a number");
}

TEST(TensorInventory, LanguageModelPrefixOnlyWhenLayerZeroNormHasIt) {
  auto prefixOf = [](std::set<std::string> names) {
    return k3::languageModelPrefix([&](const std::string& n) { return names.count(n) > 0; });
  };
  const std::string norm = "model.layers.0.input_layernorm.weight";
  EXPECT_EQ(prefixOf({norm}), "");
  EXPECT_EQ(prefixOf({"language_model." + norm}), "language_model.");
  EXPECT_EQ(prefixOf({norm, "language_model." + norm}), "");  // the plain name wins (peer rule)
  EXPECT_EQ(prefixOf({"language_model.model.layers.1.input_layernorm.weight"}), "");
  EXPECT_EQ(prefixOf({}), "");
}
