#include "k3/model/forward.h"

#include <algorithm>

#include "k3/io/error.h"
#include "k3/model/linear.h"
#include "k3/kernels/ops.h"

namespace k3::model {

ModelState::ModelState(const ModelConfig& c, size_t maxContext) {
  kda.resize(static_cast<size_t>(c.numLayers));
  mla.resize(static_cast<size_t>(c.numLayers));
  for (int i = 0; i < c.numLayers; ++i) {
    if (c.isKdaLayer(i))
      kda[static_cast<size_t>(i)] = KdaState(c);
    else
      mla[static_cast<size_t>(i)] = MlaCache(c, maxContext);
  }
}

void ModelState::reset() {
  for (auto& k : kda) k.reset();
  for (auto& m : mla) m.reset();
  position = 0;
}

Forward::Forward(const ModelWeights& w, size_t maxChunk, size_t threads, size_t maxContext, float expertTopP)
    : w_(w), c_(w.config()), D_(c_.hiddenSize), maxChunk_(maxChunk),
      kda_(c_, maxChunk, threads), mla_(c_, maxChunk, threads, maxContext), dense_(c_, maxChunk),
      moe_(c_, maxChunk, threads, w.options().int8Activations, expertTopP), prefix_(maxChunk * D_), mixed_(maxChunk * D_), delta_(maxChunk * D_) {
  // Snapshots: one per started block, plus room for the head's mix.
  const size_t blocks = static_cast<size_t>(c_.numAttnResBlocks()) + 1;
  for (size_t t = 0; t < maxChunk; ++t) attnRes_.emplace_back(D_, blocks);
}

void Forward::run(ModelState& st, const int32_t* ids, size_t n, bool allPositions, float* logits,
                  ThreadPool& pool, ExpertResidency& residency, PhaseTimes* times) {
  if (n == 0 || n > maxChunk_) fail(ErrorKind::Internal, "Forward::run: chunk of ", n, " tokens");
  const float eps = c_.rmsNormEps;
  const size_t V = static_cast<size_t>(c_.vocabSize);

  // Embedding: hidden⁰ = E[id]; no block snapshots yet.
  for (size_t t = 0; t < n; ++t) {
    if (ids[t] < 0 || static_cast<size_t>(ids[t]) >= V)
      fail(ErrorKind::Usage, "token id ", ids[t], " is outside the vocabulary [0, ", V, ")");
    codec::dequantizeRow(w_.embedding(), static_cast<size_t>(ids[t]), &prefix_[t * D_]);
    attnRes_[t].clear();
  }
  PhaseClock clock(times);
  // Past the last layer's attention only the rows the head reads are used:
  // its attention outputs and MLP run for those (the last position, every
  // position with allPositions, none without logits), while its cache or
  // state still takes every row.
  const size_t keepLast = !logits ? 0 : allPositions ? n : 1;

  for (int i = 0; i < c_.numLayers; ++i) {
    const LayerWeights& L = w_.layer(i);
    const bool startsBlock = i % c_.attnResBlockSize == 0;
    const size_t keep = i + 1 == c_.numLayers ? keepLast : n, skip = n - keep;

    // Attention input: the AttnRes mix of the snapshots and the prefix (layer 0
    // has no snapshots and uses hidden as is); a new block snapshots the prefix.
    // Per token (each has its own snapshots and rows), so over the pool.
    pool.forEach(n, [&](size_t t) {
      float* prefix = &prefix_[t * D_];
      float* x = &mixed_[t * D_];
      if (attnRes_[t].count() > 0)
        attnRes_[t].mix(prefix, L.attnResScorer.data(), eps, x);
      else
        std::copy_n(prefix, D_, x);
      if (startsBlock) attnRes_[t].push(prefix);
      kernels::rmsNorm(x, L.inputNorm.data(), D_, eps, x);
    });
    clock.lap(Phase::kAttnResMix);
    if (L.kda)
      kda_.forward(L.kdaW, st.kda[static_cast<size_t>(i)], mixed_.data(), n, delta_.data(), pool);
    else
      mla_.forward(L.mlaW, st.mla[static_cast<size_t>(i)], mixed_.data(), n, &delta_[skip * D_], pool, keep);
    clock.lap(L.kda ? Phase::kKda : Phase::kMla);
    if (keep == 0) continue;

    // A new block restarts the in-block sum; then the MLP input mix.
    pool.forEach(keep, [&](size_t k) {
      const size_t t = skip + k;
      float* prefix = &prefix_[t * D_];
      const float* a = &delta_[t * D_];
      if (startsBlock)
        std::copy_n(a, D_, prefix);
      else
        for (size_t d = 0; d < D_; ++d) prefix[d] += a[d];
      float* x = &mixed_[t * D_];
      attnRes_[t].mix(prefix, L.mlpResScorer.data(), eps, x);
      kernels::rmsNorm(x, L.postAttnNorm.data(), D_, eps, x);
    });
    clock.lap(Phase::kAttnResMix);
    if (L.moe) {
      moe_.forward(L.moeW, i, &mixed_[skip * D_], keep, &delta_[skip * D_], pool, residency, times);
      clock = PhaseClock(times);  // MoeLayer timed its own phases
    } else {
      dense_.forward(L.denseW, &mixed_[skip * D_], keep, &delta_[skip * D_], pool);
      clock.lap(Phase::kDenseMlp);
    }
    for (size_t i2 = skip * D_; i2 < n * D_; ++i2) prefix_[i2] += delta_[i2];
  }
  clock.lap(Phase::kAttnResMix);
  st.position += n;
  if (!logits) return;

  // Head: final AttnRes mix, RMSNorm, lm_head (only the last row unless asked).
  const size_t first = allPositions ? 0 : n - 1;
  for (size_t t = first; t < n; ++t) {
    float* x = &mixed_[(t - first) * D_];
    attnRes_[t].mix(&prefix_[t * D_], w_.outputResScorer().data(), eps, x);
    kernels::rmsNorm(x, w_.finalNorm().data(), D_, eps, x);
  }
  linear(pool, w_.head(), mixed_.data(), n - first, logits);
  clock.lap(Phase::kHead);
}

}  // namespace k3::model
