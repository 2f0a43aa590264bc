// The K3 forward pass (spec §6), read top to bottom in Forward::run.
//
// A batch of rows goes through the model layer by layer ("layer-major"). Each
// row is one token of one sequence; a sequence's rows are consecutive and in
// order (a prefill piece, or the one token of a decode step), and several
// sequences may share a batch. Every projection (dense, MoE, and the
// attention's) is one batched matmul over all rows, the MoE runs each expert
// of the batch's union once; the recurrences and cache appends run per
// sequence on its own state, per token in order. The kernels are
// row-independent, so a sequence's results do not depend on the batch it ran
// in nor on how its tokens were split: a batch of one row is decode.
// Thread-safety: not thread-safe; one per ModelRunner (its layers' scratch).
// The ModelWeights it reads may be shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "k3/io/thread_pool.h"
#include "k3/model/attn_res.h"
#include "k3/model/dense_mlp.h"
#include "k3/model/expert_residency.h"
#include "k3/model/kda_layer.h"
#include "k3/model/mla_layer.h"
#include "k3/model/model_weights.h"
#include "k3/model/moe_layer.h"
#include "k3/model/phase_times.h"
#include "k3/model/sequence_state.h"

namespace k3::model {

// One sequence's rows in a batch: its next tokens, in order.
struct SequenceRows {
  SequenceState* seq = nullptr;
  std::span<const int32_t> ids;
  size_t logitRows = 0;  // logits wanted for its last logitRows rows: 0, 1 or ids.size()
};

class Forward {
 public:
  // maxRows: rows per batch. maxContext: the largest sequence capacity run.
  // expertTopP: the MoE layers' expert top-p (1 = off, expert_top_p.h).
  Forward(const ModelWeights& w, size_t maxRows, size_t threads, size_t maxContext, float expertTopP = 1.0f);

  size_t maxChunk() const { return maxChunk_; }

  // Runs every entry's ids at its sequence's position and advances it (each
  // sequence at most once per batch; Σ ids ≤ maxChunk). Writes the logits
  // asked for into `logits` ([Σ logitRows × V], entries in batch order) and
  // copies each entry's last row of them into its sequence's lastLogits.
  // Ids, capacities and the batch's shape are checked before any state
  // changes. Adds the time of each phase to `times` unless null.
  void run(std::span<const SequenceRows> batch, float* logits, ThreadPool& pool, ExpertResidency& residency,
           PhaseTimes* times = nullptr);

 private:
  void check(std::span<const SequenceRows> batch, bool haveLogits) const;
  size_t plan(std::span<const SequenceRows> batch);  // ids_, keptRows_; returns the rows

  const ModelWeights& w_;
  const ModelConfig& c_;
  size_t D_, maxChunk_, maxContext_;
  KdaLayer kda_;
  MlaLayer mla_;
  DenseMlp dense_;
  MoeLayer moe_;
  std::vector<AttnResState> attnRes_;  // one per row
  std::vector<float> prefix_;          // [rows × D] running in-block sum (= hidden)
  std::vector<float> mixed_;           // [rows × D] AttnRes mix, then its RMSNorm
  std::vector<float> delta_;           // [rows × D] attention / MLP output
  std::vector<int32_t> ids_;           // [rows] the batch's tokens
  std::vector<size_t> allRows_;        // 0, 1, …: the rows every layer but the last works on
  std::vector<size_t> keptRows_;       // the rows the head reads, ascending
  std::vector<KdaRows> kdaRows_;       // per entry: its state of the current layer and its rows
  std::vector<MlaRows> mlaRows_;
};

}  // namespace k3::model
