#include "k3/serve/engine.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "k3/serve/sequence_decoder.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int32_t specialOr(const tok::Tokenizer& tok, const char* name) {
  auto id = tok.specialId(name);
  return id ? static_cast<int32_t>(*id) : -1;
}

}  // namespace

Engine::Engine(const model::ModelWeights& w, const tok::Tokenizer& tok, const model::SessionOptions& so,
               const EngineOptions& eo)
    : ctx_(so.maxContext), vocab_(static_cast<size_t>(w.config().vocabSize)), tok_(tok), session_(w, so), cache_(eo.stateCacheBytes), queue_(eo.queue) {
  if (w.config().bosTokenId) bos_ = static_cast<int64_t>(*w.config().bosTokenId);
  for (int64_t e : w.config().eosTokenIds) stopIds_.push_back(static_cast<int32_t>(e));
  if (int32_t eom = specialOr(tok, "<|end_of_msg|>"); eom >= 0) stopIds_.push_back(eom);
  worker_ = std::thread([this] { work(); });
}

void Engine::shutdown() {
  if (!worker_.joinable()) return;
  stopping_ = true;
  for (auto& job : queue_.close()) {
    std::lock_guard<std::mutex> lock(job->m);
    job->error = "the server is shutting down";
    job->errorStatus = 503;
    job->done = true;
    job->cv.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(statsMutex_);
    if (running_) running_->cancel = true;
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
  while (auto job = queue_.pop()) {
    {
      std::lock_guard<std::mutex> lock(statsMutex_);
      running_ = job.get();
    }
    std::string error;
    try {
      run(*job);
    } catch (const std::exception& e) {
      error = e.what();
      liveLogitsCurrent_ = false;
    }
    {
      std::lock_guard<std::mutex> lock(statsMutex_);
      running_ = nullptr;
      stats_.jobs += 1;
      stats_.promptTokens += job->usage.promptTokens;
      stats_.cachedTokens += job->usage.cachedTokens;
      stats_.generatedTokens += job->usage.completionTokens;
      stats_.prefillSeconds += job->prefillSeconds;
      stats_.decodeSeconds += job->decodeSeconds;
      if (job->finishReason == "cancelled") stats_.cancelled += 1;
      stats_.residency = session_.residency().stats();
      stats_.expertsKeptPerTokenLayer = session_.expertsKeptPerTokenLayer();
      stats_.cache = cache_.stats();
    }
    {
      std::lock_guard<std::mutex> lock(job->m);
      job->error = error;
      // Cut by the shutdown: an error (503 / an error event), never a finish.
      if (error.empty() && stopping_ && job->finishReason == "cancelled") {
        job->error = "the server is shutting down; the generation was cut";
        job->errorStatus = 503;
      }
      job->done = true;
    }
    job->cv.notify_all();
  }
}

void Engine::run(GenerationJob& job) {
  job.queueSeconds = since(job.enqueued);
  job.usage.promptTokens = job.prompt.size();
  if (job.cancel) {
    job.finishReason = "cancelled";
    return;
  }
  // Prefill: resume from the longest held prefix, feed the rest.
  auto t0 = Clock::now();
  const size_t reused = cache_.resume(session_, job.prompt, liveLogitsCurrent_);
  job.usage.cachedTokens = reused;
  liveLogitsCurrent_ = false;
  const bool fed = session_.feed(std::span<const int32_t>(job.prompt).subspan(reused), nullptr, &job.cancel);
  job.prefillSeconds = since(t0);
  if (!fed) {
    job.finishReason = "cancelled";
    return;
  }
  liveLogitsCurrent_ = true;
  cache_.checkpoint(session_);
  decode(job);
}

void Engine::decode(GenerationJob& job) {
  const auto t0 = Clock::now();
  SequenceDecoder seq(job, tok_, stopIds_, session_.vocabSize(), ctx_);
  bool cancelled = false;
  for (size_t i = 0; i < seq.maxTokens(); ++i) {
    if (job.cancel) {
      cancelled = true;
      break;
    }
    const int32_t id = seq.pick(session_.lastLogits());
    if (!seq.accept(id)) break;
    session_.feed({&id, 1});
  }
  seq.finish(cancelled);
  job.decodeSeconds = since(t0);
}

}  // namespace k3::serve
