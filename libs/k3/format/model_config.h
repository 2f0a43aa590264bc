// ModelConfig: the K3 hyper-parameters read from config.json (spec §1).
// Values come from `text_config` when it is an object, else from the root;
// bos/eos are looked up at the root first. Nothing is hard-coded: the layer
// schedule comes from linear_attn_config.kda_layers.
// Thread-safety: a plain value, not changed after it is read; safe to share
// across threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3 {

// Bounds config.json (and the manifest's copy of these counts) is held to:
// K3 has 93 layers and 896 experts; loops over layers x experts stay sane.
inline constexpr int kMaxLayers = 128;
inline constexpr int kMaxExperts = 4096;

struct ModelConfig {
  std::string modelType;      // root model_type (e.g. "kimi_k3")
  int hiddenSize = 0;         // D
  int numLayers = 0;          // L
  int vocabSize = 0;          // V
  int firstKDenseReplace = 1; // layers i < k use the dense MLP
  int intermediateSize = 0;   // dense MLP inner width
  // MLA
  int numAttentionHeads = 0;
  int qLoraRank = 0;
  int kvLoraRank = 0;
  int qkNopeHeadDim = 0;
  int qkRopeHeadDim = 0;
  int vHeadDim = 0;
  // LatentMoE
  int numExperts = 0;
  int numExpertsPerToken = 0;  // top-k
  int moeIntermediateSize = 0;
  int latentSize = 0;          // routed_expert_hidden_size
  int numSharedExperts = 0;
  // AttnRes, activations, norms
  int attnResBlockSize = 0;
  float situBeta = 4.0f;
  float situLinearBeta = 25.0f;
  float rmsNormEps = 1e-5f;
  // KDA (linear_attn_config)
  int kdaNumHeads = 0;
  int kdaHeadDim = 0;
  int kdaConvKernel = 0;
  float kdaGateLowerBound = -5.0f;
  std::vector<int> kdaLayers;  // 1-based, as in the file
  // Positions the model was trained for (max_position_embeddings); 0 = not given.
  int64_t maxPositionEmbeddings = 0;
  // Token ids
  std::optional<int64_t> bosTokenId;
  std::vector<int64_t> eosTokenIds;

  // Derived quantities (spec §1.3).
  int kdaProjDim() const { return kdaNumHeads * kdaHeadDim; }                 // P
  int mlaQkHeadDim() const { return qkNopeHeadDim + qkRopeHeadDim; }
  int sharedIntermediate() const { return moeIntermediateSize * numSharedExperts; }
  int numAttnResBlocks() const;  // ceil(L / block size): snapshots before the head
  bool isKdaLayer(int layer) const;  // 0-based layer
  bool isMoeLayer(int layer) const { return layer >= firstKDenseReplace; }

  // Parses config.json text; throws k3::Error(Config) naming `path` and key.
  static ModelConfig parse(std::string_view json, const std::string& path);
  static ModelConfig load(const std::string& path);
};

}  // namespace k3
