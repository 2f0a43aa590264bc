// Gated NoPE Multi-head Latent Attention (spec §6.4). The cache holds only the
// compact latent per position (L: kv_lora_rank floats, R: the shared rope-dim
// key), and attention runs in the absorbed form: the query is pulled into the
// latent space through kv_b's key rows, and the value rows are applied to the
// probability-weighted latent afterwards.
// Thread-safety: an MlaLayer holds one batch's scratch and an MlaCache one
// sequence's rows: neither is thread-safe; one layer per Forward, which forks
// over its ThreadPool.
#pragma once

#include <cstddef>
#include <span>
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

// One sequence's rows of a batch: [row0, row0 + n), appended to `cache` in order.
struct MlaRows {
  MlaCache* cache;
  size_t row0, n;
};

class MlaLayer {
 public:
  MlaLayer(const ModelConfig& c, size_t maxChunk, size_t threads, size_t maxContext);

  // x: [n × D] normed inputs; each sequence's rows (`seqs` covers the rows,
  // ascending) go into its cache at positions cache.length …, and attend
  // over that cache only. out: [kept × D], the outputs of rows kept[0], …
  // (ascending; empty: the caches only). The projections are batched over
  // all rows (the queries over the kept ones).
  void forward(const MlaWeights& w, std::span<const MlaRows> seqs, const float* x, size_t n,
               std::span<const size_t> kept, float* out, ThreadPool& pool);

 private:
  // Attention of the kept rows for heads [h0, h1): kept row k reads
  // rowCache_[k]'s first rowLength_[k] positions.
  void heads(const MlaWeights& w, size_t kept, size_t h0, size_t h1, float* tmp);

  size_t D_, H_, qr_, kvr_, nope_, rope_, vd_, maxContext_;
  float eps_;
  // Heads attended together per pass over the cache (bounds the scores scratch).
  static constexpr size_t kHeadGroup = 8;
  // Up to this many kept rows, int8-row kv_b is read in place (the *I8
  // kernels, the same bits); more rows share one f32 dequantization per head.
  static constexpr size_t kInPlaceRows = 4;

  std::vector<float> xk_;                         // [chunk × D] the kept rows of x, when not all are
  std::vector<float> qa_, Q_, ckv_, gate_, ctx_;  // chunk buffers
  std::vector<const MlaCache*> rowCache_;         // [chunk] per kept row: its sequence's cache
  std::vector<size_t> rowLength_;                 // [chunk] per kept row: positions it attends to
  std::vector<float> QA_, CL_;                    // [chunk × H × kvr] absorbed queries, weighted latents
  std::vector<float> tmp_;                        // per-thread scratch
  size_t tmpPerThread_;
};

}  // namespace k3::model
