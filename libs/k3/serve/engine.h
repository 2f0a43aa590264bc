// The engine: one ModelRunner, one worker thread running the Scheduler
// (continuous batching of up to --parallel sequences, --batch-tokens rows per
// step), fed from a bounded FIFO. A job joins the batch at the next step once
// a slot is free, resumes from the state cache, has its prompt fed in pieces
// between decode steps (cancellable between steps), then samples token by
// token through its own SequenceDecoder (sampler, output parser, stop
// matcher), pushing deltas as they appear. Checkpoints at the end of each
// prompt and reply go to the state cache; the reply's ids to the memory of
// reply ids.
// Thread-safety: submit(), queueDepth(), stats(), slots() and the getters are
// safe from any thread; the runner, the scheduler and the state cache are
// touched by the worker thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "k3/model/model_runner.h"
#include "k3/model/model_weights.h"
#include "k3/model/session.h"
#include "k3/serve/generation_job.h"
#include "k3/serve/reply_ids.h"
#include "k3/serve/request_queue.h"
#include "k3/serve/scheduler.h"
#include "k3/serve/state_cache.h"
#include "k3/tok/grammar_vocab.h"
#include "k3/tok/tokenizer.h"

namespace k3::serve {

struct EngineOptions {
  size_t queue = 8;              // jobs waiting for a slot
  StateCacheOptions stateCache;  // its container identity is filled in by the engine
  // The memory of generated reply ids (reply_ids.h); on with or without the
  // state cache, so a prompt renders the same either way.
  uint64_t replyIdBytes = 64ull << 20;
  size_t parallel = 4;           // sequences in flight (--parallel)
  size_t batchTokens = 0;        // rows per step (--batch-tokens); 0: the session's chunk
  bool logBatches = false;       // a stderr line per second of steps: their count and rows
};

struct EngineStats {
  uint64_t promptTokens = 0, cachedTokens = 0, generatedTokens = 0, jobs = 0, cancelled = 0;
  double prefillSeconds = 0, decodeSeconds = 0;
  uint64_t constrained = 0, maskedTokens = 0, mistypedArguments = 0;  // grammar-constrained generations; their masked tokens
  double maskSeconds = 0;
  double expertsKeptPerTokenLayer = 0;  // top-k unless --expert-top-p drops some
  uint64_t steps = 0, decodeRows = 0, prefillRows = 0;  // forward steps and their rows
  model::ResidencyStats residency;
  StateCacheStats cache;
  std::vector<SlotReport> slots;  // what each sequence slot is doing
};

class Engine {
 public:
  // so: threads, context (--ctx, every slot's capacity), chunk (the default
  // rows per step), expert options.
  Engine(const model::ModelWeights& w, const tok::Tokenizer& tok, const model::SessionOptions& so,
         const EngineOptions& eo);
  ~Engine() { shutdown(); }
  // Fails the waiting jobs, cancels the running ones (they stop within a
  // step) and joins the worker. Idempotent.
  void shutdown();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues the job; false when the queue is full.
  bool submit(std::shared_ptr<GenerationJob> job);
  size_t queueDepth() const { return queue_.depth(); }
  size_t contextSize() const { return ctx_; }
  size_t vocabSize() const { return vocab_; }
  std::optional<int64_t> bosId() const { return bos_; }
  // Ids that end a generation: the config's eos ids and <|end_of_msg|>.
  const std::vector<int32_t>& stopIds() const { return stopIds_; }
  EngineStats stats() const;
  // The ids of the replies it generated, for rendering later prompts.
  const ReplyIdMemory& replyIds() const { return replyIds_; }

 private:
  void work();
  void record(std::vector<FinishedJob> finished);  // counts them, hands them back
  size_t ctx_, vocab_;
  std::optional<int64_t> bos_;
  std::vector<int32_t> stopIds_;
  model::ModelRunner runner_;
  StateCache cache_;
  ReplyIdMemory replyIds_;
  Scheduler scheduler_;
  bool logBatches_;
  RequestQueue<GenerationJob> queue_;
  // shutdown(): the worker cancels the jobs in flight; a cancelled job ends as a 503, not as finished.
  std::atomic<bool> stopping_{false};
  mutable std::mutex statsMutex_;  // guards stats_
  EngineStats stats_;
  std::thread worker_;
};

}  // namespace k3::serve
