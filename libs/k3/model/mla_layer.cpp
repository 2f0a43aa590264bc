#include "k3/model/mla_layer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "k3/io/error.h"
#include "k3/model/linear.h"
#include "k3/kernels/mla_kernels.h"
#include "k3/kernels/ops.h"

namespace k3::model {

MlaCache::MlaCache(const ModelConfig& c, size_t capacity)
    : L(capacity * static_cast<size_t>(c.kvLoraRank)),
      R(capacity * static_cast<size_t>(c.qkRopeHeadDim)),
      cap(capacity) {}

MlaLayer::MlaLayer(const ModelConfig& c, size_t maxChunk, size_t threads, size_t maxContext)
    : D_(c.hiddenSize), H_(c.numAttentionHeads), qr_(c.qLoraRank), kvr_(c.kvLoraRank),
      nope_(c.qkNopeHeadDim), rope_(c.qkRopeHeadDim), vd_(c.vHeadDim), maxContext_(maxContext),
      eps_(c.rmsNormEps) {
  xk_.resize(maxChunk * D_);
  rowCache_.resize(maxChunk);
  rowLength_.resize(maxChunk);
  qa_.resize(maxChunk * qr_);
  Q_.resize(maxChunk * H_ * (nope_ + rope_));
  ckv_.resize(maxChunk * (kvr_ + rope_));
  gate_.resize(maxChunk * H_ * vd_);
  ctx_.resize(maxChunk * H_ * vd_);
  QA_.resize(maxChunk * H_ * kvr_);
  CL_.resize(maxChunk * H_ * kvr_);
  // kv_b rows of one head [(nope + vd) × kvr], scores [kHeadGroup × maxContext]
  tmpPerThread_ = (nope_ + vd_) * kvr_ + kHeadGroup * maxContext;
  tmp_.resize(threads * tmpPerThread_);
}

void MlaLayer::forward(const MlaWeights& w, std::span<const MlaRows> seqs, const float* x, size_t n,
                       std::span<const size_t> kept, float* out, ThreadPool& pool) {
  for (const MlaRows& s : seqs)
    if (s.cache->length + s.n > maxContext_ || s.cache->length + s.n > s.cache->cap)
      fail(ErrorKind::Usage, "context limit reached: ", s.cache->length + s.n, " positions > --ctx ",
           std::min(maxContext_, s.cache->cap));
  const size_t keep = kept.size();
  if (keep > n) fail(ErrorKind::Internal, "MlaLayer::forward: ", keep, " of ", n, " rows kept");
  // Every row kept: the three projections of x in one fork-join. Otherwise
  // the caches' projection for all rows, then queries and gates for the
  // kept ones (gathered into rows [0, keep) of xk_).
  if (keep == n) {
    linear(pool, {LinearJob{&w.qa, x, qa_.data()}, LinearJob{&w.kva, x, ckv_.data()}, LinearJob{&w.g, x, gate_.data()}},
           n);
  } else {
    linear(pool, w.kva, x, n, ckv_.data());
    for (size_t k = 0; k < keep; ++k) std::copy_n(x + kept[k] * D_, D_, &xk_[k * D_]);
    if (keep > 0) linear(pool, {LinearJob{&w.qa, xk_.data(), qa_.data()}, LinearJob{&w.g, xk_.data(), gate_.data()}}, keep);
  }
  for (size_t t = 0; t < keep; ++t) kernels::rmsNorm(&qa_[t * qr_], w.qaNorm.data(), qr_, eps_, &qa_[t * qr_]);
  if (keep > 0) linear(pool, w.qb, qa_.data(), keep, Q_.data());
  // Append each sequence's rows to its cache first; its row t then sees
  // positions 0 … pos0 + t of that cache.
  size_t k = 0;
  for (const MlaRows& s : seqs) {
    const size_t pos0 = s.cache->length;
    for (size_t t = 0; t < s.n; ++t) {
      const float* c = &ckv_[(s.row0 + t) * (kvr_ + rope_)];
      kernels::rmsNorm(c, w.kvaNorm.data(), kvr_, eps_, &s.cache->L[(pos0 + t) * kvr_]);
      std::copy_n(c + kvr_, rope_, &s.cache->R[(pos0 + t) * rope_]);
    }
    s.cache->length = pos0 + s.n;
    for (; k < keep && kept[k] < s.row0 + s.n; ++k) {
      rowCache_[k] = s.cache;
      rowLength_[k] = pos0 + (kept[k] - s.row0) + 1;
    }
  }
  if (keep == 0) return;
  uint64_t cacheRows = 0;  // the scores and weighted rows read every kept row's cache
  for (size_t r = 0; r < keep; ++r) cacheRows += rowLength_[r];
  pool.run([&](size_t tid, size_t nt) {
    heads(w, keep, H_ * tid / nt, H_ * (tid + 1) / nt, tmp_.data() + tid * tmpPerThread_);
  }, threadsForMacs(pool, H_ * (cacheRows * (2 * kvr_ + rope_) + uint64_t{keep} * (nope_ + vd_) * kvr_)));
  linear(pool, w.o, ctx_.data(), keep, out);
}

void MlaLayer::heads(const MlaWeights& w, size_t n, size_t h0, size_t h1, float* tmp) {
  float* rows = tmp;                          // kv_b key or value rows of one head, dequantized
  float* scores = rows + (nope_ + vd_) * kvr_;  // [kHeadGroup × maxContext]
  const size_t qk = nope_ + rope_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(qk));
  // 1. Absorb each query into the latent space through its head's key rows:
  // qa = Σ_dd q_nope[dd]·rows[dd], the weighted-latent sum with the key rows
  // for the cache and the tokens' queries for the probabilities (the same
  // bits as a zero-filled axpy per row; the kernel reads each row once per
  // four tokens, not once per token).
  // Decode's few rows read int8 kv_b in place: 1 byte a weight, not a
  // dequantized f32 row written and read back (same bits either way).
  const bool inPlace = w.kvb.format == codec::WeightFormat::I8Row && n <= kInPlaceRows;
  const auto* kvbQ = static_cast<const int8_t*>(w.kvb.data);
  const auto* kvbScale = static_cast<const float*>(w.kvb.scales);
  for (size_t h = h0; h < h1; ++h) {
    const float* q = &Q_[h * qk];
    float* qa = &QA_[h * kvr_];
    const size_t row0 = h * (nope_ + vd_);
    if (inPlace) {
      kernels::mlaWeightedLatentI8(q, H_ * qk, n, kvbQ + row0 * kvr_, kvbScale + row0, nope_, kvr_, qa, H_ * kvr_);
      continue;
    }
    for (size_t r = 0; r < nope_; ++r) codec::dequantizeRow(w.kvb, row0 + r, rows + r * kvr_);
    kernels::mlaWeightedLatent(q, H_ * qk, n, rows, nope_, kvr_, qa, H_ * kvr_);
  }
  // 2. Attention over the row's cache, several heads per pass over it:
  // scores, softmax, probability-weighted latent.
  for (size_t t = 0; t < n; ++t) {
    const MlaCache& cache = *rowCache_[t];
    const size_t len = rowLength_[t];
    for (size_t g = h0; g < h1; g += kHeadGroup) {
      const size_t ng = std::min(kHeadGroup, h1 - g);
      const float* qa = &QA_[(t * H_ + g) * kvr_];
      const float* qr = &Q_[(t * H_ + g) * qk + nope_];
      float* cl = &CL_[(t * H_ + g) * kvr_];
      kernels::mlaScores(qa, kvr_, qr, qk, ng, cache.L.data(), cache.R.data(), len, kvr_, rope_, scale, scores,
                         maxContext_);
      for (size_t j = 0; j < ng; ++j) kernels::softmax(scores + j * maxContext_, len);
      kernels::mlaWeightedLatent(scores, maxContext_, ng, cache.L.data(), len, kvr_, cl, kvr_);
    }
  }
  // 3. Value rows on the weighted latent, then the sigmoid output gate.
  for (size_t h = h0; h < h1; ++h) {
    const size_t row0 = h * (nope_ + vd_) + nope_;
    if (!inPlace)
      for (size_t r = 0; r < vd_; ++r) codec::dequantizeRow(w.kvb, row0 + r, rows + r * kvr_);
    for (size_t t = 0; t < n; ++t) {
      const float* cl = &CL_[(t * H_ + h) * kvr_];
      float* ctx = &ctx_[(t * H_ + h) * vd_];
      if (inPlace)
        kernels::mlaRowDotsI8(kvbQ + row0 * kvr_, kvbScale + row0, vd_, kvr_, cl, ctx);
      else
        for (size_t dd = 0; dd < vd_; ++dd) ctx[dd] = kernels::dot(rows + dd * kvr_, cl, kvr_);
      kernels::mulSigmoid(ctx, &gate_[(t * H_ + h) * vd_], vd_);
    }
  }
}

}  // namespace k3::model
