#include "k3/serve/engine.h"

#include <algorithm>
#include <chrono>

#include "k3/model/sampler.h"
#include "k3/serve/stop_matcher.h"
#include "k3/serve/utf8_stream.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int32_t specialOr(const tok::Tokenizer& tok, const char* name) {
  auto id = tok.specialId(name);
  return id ? static_cast<int32_t>(*id) : -1;
}

// Interim: splits chat output into reasoning and content by the XTML
// structure (<|open|>tag<|sep|> … <|close|>tag<|sep|>), until the tok output
// parser (tool calls, malformed output) replaces it.
class InterimChannelSplit {
 public:
  InterimChannelSplit(bool thinking, int32_t open, int32_t close, int32_t sep)
      : channel_(thinking ? OutputDelta::Kind::Reasoning : OutputDelta::Kind::Content),
        open_(open), close_(close), sep_(sep) {}
  // The channel the token's text belongs to, or false for structure.
  bool visible(int32_t id, const std::string& bytes, OutputDelta::Kind& kind) {
    if (id == open_ || id == close_) {
      inTag_ = true;
      closing_ = id == close_;
      tag_.clear();
      return false;
    }
    if (inTag_) {
      if (id != sep_) {
        tag_ += bytes;
        return false;
      }
      inTag_ = false;
      hidden_ = closing_ || (tag_.rfind("think", 0) != 0 && tag_.rfind("response", 0) != 0);
      if (!hidden_) channel_ = tag_.rfind("think", 0) == 0 ? OutputDelta::Kind::Reasoning : OutputDelta::Kind::Content;
      return false;
    }
    if (id == sep_ || hidden_) return false;
    kind = channel_;
    return true;
  }

 private:
  OutputDelta::Kind channel_;
  int32_t open_, close_, sep_;
  bool inTag_ = false, closing_ = false, hidden_ = false;
  std::string tag_;
};

OutputDelta text(OutputDelta::Kind kind, std::string t) {
  OutputDelta d;
  d.kind = kind;
  d.text = std::move(t);
  return d;
}

void push(GenerationJob& job, OutputDelta d) {
  if (d.text.empty() && d.kind != OutputDelta::Kind::ToolCall) return;
  {
    std::lock_guard<std::mutex> lock(job.m);
    job.pending.push_back(std::move(d));
  }
  job.cv.notify_all();
}

}  // namespace

Engine::Engine(const model::ModelWeights& w, const tok::Tokenizer& tok, const model::SessionOptions& so,
               const EngineOptions& eo)
    : ctx_(so.maxContext), vocab_(static_cast<size_t>(w.config().vocabSize)), tok_(tok), session_(w, so), cache_(eo.stateCacheBytes), queue_(eo.queue) {
  if (w.config().bosTokenId) bos_ = static_cast<int64_t>(*w.config().bosTokenId);
  for (int64_t e : w.config().eosTokenIds) stopIds_.push_back(static_cast<int32_t>(e));
  if (int32_t eom = specialOr(tok, "<|end_of_msg|>"); eom >= 0) stopIds_.push_back(eom);
  open_ = specialOr(tok, "<|open|>");
  close_ = specialOr(tok, "<|close|>");
  sep_ = specialOr(tok, "<|sep|>");
  worker_ = std::thread([this] { work(); });
}

void Engine::shutdown() {
  if (!worker_.joinable()) return;
  for (auto& job : queue_.close()) {
    std::lock_guard<std::mutex> lock(job->m);
    job->error = "the server is shutting down";
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
      stats_.cache = cache_.stats();
    }
    {
      std::lock_guard<std::mutex> lock(job->m);
      job->error = error;
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

  // Decode.
  t0 = Clock::now();
  model::Sampler sampler(job.params.sampling, session_.vocabSize());
  const size_t room = ctx_ > job.prompt.size() ? ctx_ - job.prompt.size() : 0;
  const size_t maxTokens = std::min(job.params.maxTokens, room);
  InterimChannelSplit split(job.thinking, open_, close_, sep_);
  Utf8Stream reasoningText, contentText;
  StopMatcher stop(job.params.stop);
  std::string finish = "length";
  for (size_t i = 0; i < maxTokens; ++i) {
    if (job.cancel) {
      finish = "cancelled";
      break;
    }
    const int32_t id = sampler.sample(session_.lastLogits());
    job.usage.completionTokens += 1;
    if (std::find(stopIds_.begin(), stopIds_.end(), id) != stopIds_.end()) {
      finish = "stop";
      break;
    }
    const std::string bytes = tok_.tokenBytes(static_cast<uint32_t>(id));
    OutputDelta::Kind kind = OutputDelta::Kind::Content;
    if (job.mode == GenerationJob::Mode::Text || split.visible(id, bytes, kind)) {
      if (kind == OutputDelta::Kind::Reasoning) {
        push(job, text(kind, reasoningText.push(bytes)));
      } else {
        push(job, text(kind, stop.push(contentText.push(bytes))));
        if (stop.stopped()) {
          finish = "stop";
          break;
        }
      }
    }
    // The last token of the limit is not fed: nobody reads its logits.
    if (i + 1 < maxTokens) session_.feed({&id, 1});
  }
  if (finish != "cancelled") {
    push(job, text(OutputDelta::Kind::Reasoning, reasoningText.flush()));
    if (!stop.stopped()) push(job, text(OutputDelta::Kind::Content, stop.push(contentText.flush()) + stop.flush()));
  }
  job.decodeSeconds = since(t0);
  job.finishReason = finish;
}

}  // namespace k3::serve
