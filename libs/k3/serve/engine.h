// The engine: one model Session, one worker thread, one generation at a
// time, fed from a bounded FIFO. A job resumes from the state cache, feeds
// the rest of its prompt (cancellable between prefill chunks), then samples
// token by token (cancellable between tokens) through its SequenceDecoder
// (sampler, output parser, stop matcher), pushing deltas as they appear.
// Thread-safety: submit(), queueDepth(), stats() and the getters are safe from
// any thread; the Session and the state cache are touched by the worker thread
// only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "k3/model/model_weights.h"
#include "k3/model/session.h"
#include "k3/serve/generation_job.h"
#include "k3/serve/request_queue.h"
#include "k3/serve/state_cache.h"
#include "k3/tok/tokenizer.h"

namespace k3::serve {

struct EngineOptions {
  size_t queue = 8;              // jobs waiting behind the running one
  uint64_t stateCacheBytes = 1ull << 30;
};

struct EngineStats {
  uint64_t promptTokens = 0, cachedTokens = 0, generatedTokens = 0, jobs = 0, cancelled = 0;
  double prefillSeconds = 0, decodeSeconds = 0;
  double expertsKeptPerTokenLayer = 0;  // top-k unless --expert-top-p drops some
  model::ResidencyStats residency;
  StateCacheStats cache;
};

class Engine {
 public:
  Engine(const model::ModelWeights& w, const tok::Tokenizer& tok, const model::SessionOptions& so,
         const EngineOptions& eo);
  ~Engine() { shutdown(); }
  // Fails the waiting jobs, cancels the running one (it stops within a
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

 private:
  void work();
  void run(GenerationJob& job);     // prefill, then decode()
  void decode(GenerationJob& job);  // samples from the fed prompt's logits until a stop or the limit
  size_t ctx_, vocab_;
  std::optional<int64_t> bos_;
  const tok::Tokenizer& tok_;
  model::Session session_;
  StateCache cache_;
  bool liveLogitsCurrent_ = false;
  std::vector<int32_t> stopIds_;
  RequestQueue<GenerationJob> queue_;
  mutable std::mutex statsMutex_;  // guards stats_ and running_
  GenerationJob* running_ = nullptr;
  EngineStats stats_;
  std::atomic<bool> stopping_{false};  // shutdown(): a cancelled job ends as a 503, not as finished
  std::thread worker_;
};

}  // namespace k3::serve
