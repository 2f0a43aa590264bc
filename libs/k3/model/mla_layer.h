// Gated NoPE Multi-head Latent Attention (spec §6.4). The cache holds only the
// compact latent per position (L: kv_lora_rank floats, R: the shared rope-dim
// key), and attention runs in the absorbed form: the query is pulled into the
// latent space through kv_b's key rows, and the value rows are applied to the
// probability-weighted latent afterwards.
// Thread-safety: an MlaLayer holds one chunk's scratch and an MlaCache one
// session's rows: neither is thread-safe; one layer per Forward, which forks
// over its ThreadPool.
#pragma once

#include <cstddef>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/io/thread_pool.h"
#include "k3/model/model_weights.h"

namespace k3::model {

struct MlaCache {
  std::vector<float> L;  // [capacity × kv_lora_rank]
  std::vector<float> R;  // [capacity × rope dims]
  size_t length = 0;     // positions held
  size_t cap = 0;        // positions the buffers hold (allocated once)
  MlaCache() = default;
  MlaCache(const ModelConfig& c, size_t capacity);
  void reset() { length = 0; }
};

class MlaLayer {
 public:
  MlaLayer(const ModelConfig& c, size_t maxChunk, size_t threads, size_t maxContext);

  // x: [n × D] normed inputs for positions cache.length … +n−1. All n go
  // into the cache; out: [keep × D], the outputs of the last `keep` rows
  // (keep ≤ n; 0: the cache only).
  void forward(const MlaWeights& w, MlaCache& cache, const float* x, size_t n, float* out, ThreadPool& pool,
               size_t keep);

 private:
  void heads(const MlaWeights& w, const MlaCache& cache, size_t pos0, size_t n, size_t h0, size_t h1,
             float* tmp);

  size_t D_, H_, qr_, kvr_, nope_, rope_, vd_, maxContext_;
  float eps_;
  // Heads attended together per pass over the cache (bounds the scores scratch).
  static constexpr size_t kHeadGroup = 8;

  std::vector<float> qa_, Q_, ckv_, gate_, ctx_;  // chunk buffers
  std::vector<float> QA_, CL_;                    // [chunk × H × kvr] absorbed queries, weighted latents
  std::vector<float> tmp_;                        // per-thread scratch
  size_t tmpPerThread_;
};

}  // namespace k3::model
