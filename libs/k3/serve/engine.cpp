#include "k3/serve/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "k3/kernels/cpu_features.h"
#include "k3/serve/container_identity.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int32_t> stopIdsOf(const ModelConfig& c, const tok::Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (int64_t e : c.eosTokenIds) ids.push_back(static_cast<int32_t>(e));
  if (auto eom = tok.specialId("<|end_of_msg|>")) ids.push_back(static_cast<int32_t>(*eom));
  return ids;
}

size_t rowsPerStep(const model::SessionOptions& so, const EngineOptions& eo) {
  return std::max<size_t>(1, eo.batchTokens ? eo.batchTokens : so.chunk);
}

// The numbers a checkpoint holds depend on the container and on these.
StateCacheOptions withIdentity(StateCacheOptions o, const model::ModelWeights& w, const model::SessionOptions& so) {
  if (o.ramBytes == 0) return o;
  const std::string numerics = std::string("activations=") + (w.options().int8Activations ? "int8" : "f32") +
                               " expert_top_p=" + std::to_string(so.expertTopP) +
                               " isa=" + kernels::isaName(kernels::bestIsa());
  o.container = containerIdentity(w.dir(), numerics);
  return o;
}

}  // namespace

Engine::Engine(const model::ModelWeights& w, const tok::Tokenizer& tok, const model::SessionOptions& so,
               const EngineOptions& eo)
    : ctx_(so.maxContext), vocab_(static_cast<size_t>(w.config().vocabSize)), stopIds_(stopIdsOf(w.config(), tok)),
      runner_(w, {so.threads, rowsPerStep(so, eo), so.maxContext, so.expertBudget, so.expertTopP}),
      cache_(withIdentity(eo.stateCache, w, so), w.config()), replyIds_(eo.replyIdBytes),
      scheduler_(runner_, tok, stopIds_, cache_, &replyIds_, eo.parallel, rowsPerStep(so, eo), so.maxContext),
      logBatches_(eo.logBatches), queue_(eo.queue) {
  if (w.config().bosTokenId) bos_ = static_cast<int64_t>(*w.config().bosTokenId);
  stats_.slots = scheduler_.reports();
  worker_ = std::thread([this] { work(); });
}

void Engine::shutdown() {
  if (!worker_.joinable()) return;
  stopping_ = true;  // the worker cancels the jobs in flight
  for (auto& job : queue_.close()) {
    std::lock_guard<std::mutex> lock(job->m);
    job->error = "the server is shutting down";
    job->errorStatus = 503;
    job->done = true;
    job->cv.notify_all();
  }
  worker_.join();
}

bool Engine::submit(std::shared_ptr<GenerationJob> job) {
  job->enqueued = Clock::now();
  return queue_.tryPush(std::move(job));
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(statsMutex_);
  return stats_;
}

void Engine::work() {
  auto logged = Clock::now();
  uint64_t loggedSteps = 0, loggedDecode = 0, loggedPrefill = 0;
  for (;;) {
    // Join: wait for work when nothing runs, else take what waits while slots are free.
    if (scheduler_.idle()) {
      auto job = queue_.pop();
      if (!job) break;  // closed
      scheduler_.admit(std::move(job));
    }
    while (scheduler_.hasFreeSlot())
      if (auto job = queue_.tryPop())
        scheduler_.admit(std::move(job));
      else
        break;
    if (stopping_) scheduler_.cancelAll();
    record(scheduler_.step());
    {
      std::lock_guard<std::mutex> lock(statsMutex_);
      stats_.steps = scheduler_.steps();
      stats_.decodeRows = scheduler_.decodeRows();
      stats_.prefillRows = scheduler_.prefillRows();
      stats_.slots = scheduler_.reports();
    }
    if (logBatches_ && Clock::now() - logged >= std::chrono::seconds(1)) {
      const double secs = std::chrono::duration<double>(Clock::now() - logged).count();
      const uint64_t steps = scheduler_.steps() - loggedSteps;
      if (steps > 0)
        std::fprintf(stderr, "[k3-serve] batch: %.1f steps/s, %.1f rows per step (%.1f decode, %.1f prompt)\n",
                     static_cast<double>(steps) / secs,
                     static_cast<double>(scheduler_.decodeRows() + scheduler_.prefillRows() - loggedDecode - loggedPrefill) / static_cast<double>(steps),
                     static_cast<double>(scheduler_.decodeRows() - loggedDecode) / static_cast<double>(steps),
                     static_cast<double>(scheduler_.prefillRows() - loggedPrefill) / static_cast<double>(steps));
      logged = Clock::now();
      loggedSteps = scheduler_.steps();
      loggedDecode = scheduler_.decodeRows();
      loggedPrefill = scheduler_.prefillRows();
    }
  }
}

void Engine::record(std::vector<FinishedJob> finished) {
  if (finished.empty()) return;
  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    for (const FinishedJob& f : finished) {
      const GenerationJob& job = *f.job;
      stats_.jobs += 1;
      stats_.promptTokens += job.usage.promptTokens;
      stats_.cachedTokens += job.usage.cachedTokens;
      stats_.generatedTokens += job.usage.completionTokens;
      stats_.prefillSeconds += job.prefillSeconds;
      stats_.decodeSeconds += job.decodeSeconds;
      stats_.constrained += job.grammar ? 1 : 0;
      stats_.maskedTokens += job.maskedTokens;
      stats_.maskSeconds += job.maskSeconds;
      stats_.mistypedArguments += job.mistypedArguments;
      if (job.finishReason == "cancelled") stats_.cancelled += 1;
    }
    stats_.residency = runner_.residency().stats();
    stats_.expertsKeptPerTokenLayer = model::expertsKeptPerTokenLayer(scheduler_.phases());
    stats_.cache = cache_.stats();
  }
  for (FinishedJob& f : finished) {
    {
      std::lock_guard<std::mutex> lock(f.job->m);
      f.job->error = std::move(f.error);
      // Cut by the shutdown: an error (503 / an error event), never a finish.
      if (f.job->error.empty() && stopping_ && f.job->finishReason == "cancelled") {
        f.job->error = "the server is shutting down; the generation was cut";
        f.job->errorStatus = 503;
      }
      f.job->done = true;
    }
    f.job->cv.notify_all();
  }
}

}  // namespace k3::serve
