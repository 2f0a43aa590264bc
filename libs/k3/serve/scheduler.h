// The scheduler: owns the batch of sequences in flight (continuous
// batching). It holds --parallel slots, each one sequence's model state
// (SequenceState, allocated once at --ctx) and, while it serves a job, that
// job's SequenceDecoder. Every step():
//   1. each decoding slot picks its next token from its own last logits
//      through its SequenceDecoder (sampler, parser, stop matcher: never
//      sampled here) and contributes that one row; a finished, limited or
//      cancelled sequence leaves at once;
//   2. prompts still being fed contribute pieces, oldest first, while rows
//      remain of --batch-tokens: a long prompt is fed in pieces between
//      decode steps, so running streams keep a bounded inter-token time;
//   3. one forward over all the rows (ModelRunner: the dense and MoE weights
//      read once for every row), each sequence on its own state;
//   4. a sequence whose prompt is now fed is checkpointed in the state cache
//      and decodes from the next step.
// A sequence whose reply ends (not cancelled) is checkpointed again — the
// next turn of its conversation starts there — and its ids go to the memory
// of reply ids (chat).
// A job joins (admit) at the next step: its slot is the free one whose
// state shares the longest prefix with the prompt, resumed from the state
// cache.
// Thread-safety: not thread-safe; the engine's worker thread owns it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "k3/model/model_runner.h"
#include "k3/model/sequence_state.h"
#include "k3/serve/generation_job.h"
#include "k3/serve/reply_ids.h"
#include "k3/serve/sequence_decoder.h"
#include "k3/serve/state_cache.h"
#include "k3/tok/grammar_vocab.h"
#include "k3/tok/tokenizer.h"

namespace k3::serve {

// What one slot is doing, for /slots and /metrics.
struct SlotReport {
  std::string state = "idle";  // idle | prefill | decode
  size_t promptTokens = 0, fedTokens = 0, cachedTokens = 0, generatedTokens = 0;
  double tokensPerSecond = 0;  // generated ÷ seconds since its first token
};

// A job that left the batch (finished, cancelled or failed), for the engine
// to count and hand back.
struct FinishedJob {
  std::shared_ptr<GenerationJob> job;
  std::string error;  // "" unless the engine failed it
};

class Scheduler {
 public:
  // parallel: slots; batchRows: rows per step (≤ runner.maxRows(), ≥ parallel).
  // replies: where finished chat replies' ids go (may be null).
  Scheduler(model::ModelRunner& runner, const tok::Tokenizer& tok, std::vector<int32_t> stopIds,
            StateCache& cache, ReplyIdMemory* replies, size_t parallel, size_t batchRows, size_t contextSize);

  bool idle() const { return active_ == 0; }
  bool hasFreeSlot() const { return active_ < slots_.size(); }
  // Takes a job into a free slot (hasFreeSlot() must hold). A job that cannot
  // run (its prompt past the context, cancelled already) leaves at once, in
  // the next step()'s result.
  void admit(std::shared_ptr<GenerationJob> job);
  // One step of the batch (above); returns the jobs that left.
  std::vector<FinishedJob> step();
  // Cancels every job in flight: they leave at the next step.
  void cancelAll();

  std::vector<SlotReport> reports() const;
  // Forward steps run, and their rows: decode tokens and prompt tokens.
  uint64_t steps() const { return steps_; }
  uint64_t decodeRows() const { return decodeRows_; }
  uint64_t prefillRows() const { return prefillRows_; }
  const model::PhaseTimes& phases() const { return phases_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    explicit Slot(const ModelConfig& c, size_t ctx) : state(c, ctx) {}
    model::SequenceState state;
    std::shared_ptr<GenerationJob> job;      // null: free
    std::optional<SequenceDecoder> decoder;  // set once its prompt is fed
    size_t fed = 0;                          // prompt tokens the state holds
    size_t produced = 0;                     // tokens picked
    int32_t next = 0;                        // the token this step feeds (decode)
    bool nextUnfed = false;                  // it left with `next` picked but not fed
    uint64_t joinedAt = 0;                   // admission order: older prompts are fed first
    Clock::time_point joined, decodeStart;
  };
  void leave(Slot& s, bool cancelled, std::string error, std::vector<FinishedJob>& out);
  void startDecoding(Slot& s);
  void replyEnded(Slot& s);  // checkpoint and reply ids

  model::ModelRunner& runner_;
  const tok::Tokenizer& tok_;
  std::unique_ptr<tok::GrammarVocab> grammarVocab_;  // the grammar mask's vocabulary tables
  std::vector<int32_t> stopIds_;
  StateCache& cache_;
  ReplyIdMemory* replies_;
  size_t batchRows_, ctx_, vocab_;
  std::vector<Slot> slots_;
  size_t active_ = 0;
  uint64_t admitted_ = 0, steps_ = 0, rows_ = 0, decodeRows_ = 0, prefillRows_ = 0;
  std::vector<FinishedJob> leftEarly_;       // admitted jobs that could not run
  std::vector<model::SequenceRows> batch_;   // this step's rows, one entry per sequence
  std::vector<Slot*> rowSlots_;              // the slot of each entry
  std::vector<float> logits_;                // [parallel × vocab]
  model::PhaseTimes phases_;
};

}  // namespace k3::serve
