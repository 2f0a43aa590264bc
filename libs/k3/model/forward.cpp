#include "k3/model/forward.h"

#include <algorithm>
#include <numeric>

#include "k3/io/error.h"
#include "k3/model/linear.h"
#include "k3/kernels/ops.h"

namespace k3::model {

Forward::Forward(const ModelWeights& w, size_t maxRows, size_t threads, size_t maxContext, float expertTopP)
    : w_(w), c_(w.config()), D_(c_.hiddenSize), maxChunk_(maxRows), maxContext_(maxContext),
      kda_(c_, maxRows, threads), mla_(c_, maxRows, threads, maxContext), dense_(c_, maxRows),
      moe_(c_, maxRows, threads, w.options().int8Activations, expertTopP), prefix_(maxRows * D_),
      mixed_(maxRows * D_), delta_(maxRows * D_), ids_(maxRows), allRows_(maxRows) {
  // Snapshots: one per started block, plus room for the head's mix.
  const size_t blocks = static_cast<size_t>(c_.numAttnResBlocks()) + 1;
  for (size_t t = 0; t < maxRows; ++t) attnRes_.emplace_back(D_, blocks);
  std::iota(allRows_.begin(), allRows_.end(), size_t{0});
  keptRows_.reserve(maxRows);
  kdaRows_.reserve(maxRows);
  mlaRows_.reserve(maxRows);
}

void Forward::check(std::span<const SequenceRows> batch, bool haveLogits) const {
  const size_t V = static_cast<size_t>(c_.vocabSize);
  size_t n = 0, logitRows = 0;
  for (size_t b = 0; b < batch.size(); ++b) {
    const SequenceRows& r = batch[b];
    if (!r.seq || r.ids.empty() || (r.logitRows != 0 && r.logitRows != 1 && r.logitRows != r.ids.size()))
      fail(ErrorKind::Internal, "Forward::run: batch entry ", b, " with ", r.ids.size(), " rows, ", r.logitRows,
           " of them with logits");
    for (size_t a = 0; a < b; ++a)
      if (batch[a].seq == r.seq) fail(ErrorKind::Internal, "Forward::run: a sequence twice in one batch");
    if (r.seq->position() + r.ids.size() > std::min(r.seq->capacity(), maxContext_))
      fail(ErrorKind::Usage, "context limit reached: ", r.seq->position() + r.ids.size(), " positions > --ctx ",
           std::min(r.seq->capacity(), maxContext_));
    for (int32_t id : r.ids)
      if (id < 0 || static_cast<size_t>(id) >= V)
        fail(ErrorKind::Usage, "token id ", id, " is outside the vocabulary [0, ", V, ")");
    n += r.ids.size();
    logitRows += r.logitRows;
  }
  if (n == 0 || n > maxChunk_) fail(ErrorKind::Internal, "Forward::run: a batch of ", n, " rows");
  if (logitRows > 0 && !haveLogits) fail(ErrorKind::Internal, "Forward::run: logits asked for, no buffer");
}

size_t Forward::plan(std::span<const SequenceRows> batch) {
  // Rows one entry after another; the head reads each entry's last logitRows.
  keptRows_.clear();
  size_t row = 0;
  for (const SequenceRows& r : batch) {
    std::copy(r.ids.begin(), r.ids.end(), ids_.begin() + static_cast<ptrdiff_t>(row));
    row += r.ids.size();
    for (size_t k = row - r.logitRows; k < row; ++k) keptRows_.push_back(k);
  }
  return row;
}

void Forward::run(std::span<const SequenceRows> batch, float* logits, ThreadPool& pool,
                  ExpertResidency& residency, PhaseTimes* times) {
  check(batch, logits != nullptr);
  const size_t n = plan(batch);
  const float eps = c_.rmsNormEps;
  const size_t V = static_cast<size_t>(c_.vocabSize);

  // Embedding: hidden⁰ = E[id]; no block snapshots yet.
  for (size_t t = 0; t < n; ++t) {
    codec::dequantizeRow(w_.embedding(), static_cast<size_t>(ids_[t]), &prefix_[t * D_]);
    attnRes_[t].clear();
  }
  PhaseClock clock(times);

  for (int i = 0; i < c_.numLayers; ++i) {
    const LayerWeights& L = w_.layer(i);
    const size_t layer = static_cast<size_t>(i);
    const bool startsBlock = i % c_.attnResBlockSize == 0;
    // Past the last layer's attention only the rows the head reads go on
    // (its cache or state still takes every row): `rows[k]` is the row
    // behind the k-th of `keep`, whose outputs sit compact at k.
    const bool last = i + 1 == c_.numLayers;
    const size_t* rows = last ? keptRows_.data() : allRows_.data();
    const size_t keep = last ? keptRows_.size() : n;

    // Attention input: the AttnRes mix of the snapshots and the prefix (layer 0
    // has no snapshots and uses hidden as is); a new block snapshots the prefix.
    // Per row (each has its own snapshots), so over the pool.
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
    // Attention: projections over all rows, the recurrence or the cache per
    // sequence, on its own state.
    size_t row0 = 0;
    kdaRows_.clear();
    mlaRows_.clear();
    for (const SequenceRows& r : batch) {
      if (L.kda)
        kdaRows_.push_back({&r.seq->kda[layer], row0, r.ids.size()});
      else
        mlaRows_.push_back({&r.seq->mla[layer], row0, r.ids.size()});
      row0 += r.ids.size();
    }
    if (L.kda) {
      kda_.forward(L.kdaW, kdaRows_, mixed_.data(), n, delta_.data(), pool);
      for (size_t k = 0; k < keep; ++k)
        if (rows[k] != k) std::copy_n(&delta_[rows[k] * D_], D_, &delta_[k * D_]);
    } else {
      mla_.forward(L.mlaW, mlaRows_, mixed_.data(), n, std::span<const size_t>(rows, keep), delta_.data(), pool);
    }
    clock.lap(L.kda ? Phase::kKda : Phase::kMla);
    if (keep == 0) continue;

    // A new block restarts the in-block sum; then the MLP input mix.
    pool.forEach(keep, [&](size_t k) {
      const size_t t = rows[k];
      float* prefix = &prefix_[t * D_];
      const float* a = &delta_[k * D_];
      if (startsBlock)
        std::copy_n(a, D_, prefix);
      else
        for (size_t d = 0; d < D_; ++d) prefix[d] += a[d];
      float* x = &mixed_[k * D_];
      attnRes_[t].mix(prefix, L.mlpResScorer.data(), eps, x);
      kernels::rmsNorm(x, L.postAttnNorm.data(), D_, eps, x);
    });
    clock.lap(Phase::kAttnResMix);
    // The MLP over all rows at once (the MoE loads each expert of the rows' union once).
    if (L.moe) {
      moe_.forward(L.moeW, i, mixed_.data(), keep, delta_.data(), pool, residency, times);
      clock = PhaseClock(times);  // MoeLayer timed its own phases
    } else {
      dense_.forward(L.denseW, mixed_.data(), keep, delta_.data(), pool);
      clock.lap(Phase::kDenseMlp);
    }
    for (size_t k = 0; k < keep; ++k) {
      float* prefix = &prefix_[rows[k] * D_];
      const float* a = &delta_[k * D_];
      for (size_t d = 0; d < D_; ++d) prefix[d] += a[d];
    }
  }
  clock.lap(Phase::kAttnResMix);
  for (const SequenceRows& r : batch) {
    r.seq->tokens.insert(r.seq->tokens.end(), r.ids.begin(), r.ids.end());
    r.seq->logitsCurrent = false;
  }
  if (keptRows_.empty()) return;

  // Head: final AttnRes mix, RMSNorm, lm_head over the rows asked for; each
  // sequence's last one becomes its lastLogits.
  const size_t keep = keptRows_.size();
  for (size_t k = 0; k < keep; ++k) {
    const size_t t = keptRows_[k];
    float* x = &mixed_[k * D_];
    attnRes_[t].mix(&prefix_[t * D_], w_.outputResScorer().data(), eps, x);
    kernels::rmsNorm(x, w_.finalNorm().data(), D_, eps, x);
  }
  linear(pool, w_.head(), mixed_.data(), keep, logits);
  size_t row = 0;
  for (const SequenceRows& r : batch) {
    if (r.logitRows == 0) continue;
    row += r.logitRows;
    const float* src = logits + (row - 1) * V;
    if (src != r.seq->lastLogits.data()) std::copy_n(src, V, r.seq->lastLogits.data());
    r.seq->logitsCurrent = true;
  }
  clock.lap(Phase::kHead);
}

}  // namespace k3::model
