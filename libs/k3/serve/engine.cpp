#include "k3/serve/engine.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "k3/model/sampler.h"
#include "k3/serve/stop_matcher.h"
#include "k3/tok/chat_output_parser.h"
#include "k3/tok/utf8_stream.h"

namespace k3::serve {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int32_t specialOr(const tok::Tokenizer& tok, const char* name) {
  auto id = tok.specialId(name);
  return id ? static_cast<int32_t>(*id) : -1;
}

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
      stats_.expertsKeptPerTokenLayer = session_.expertsKeptPerTokenLayer();
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
  decode(job);
}

void Engine::decode(GenerationJob& job) {
  const auto t0 = Clock::now();
  model::Sampler sampler(job.params.sampling, session_.vocabSize());
  const size_t room = ctx_ > job.prompt.size() ? ctx_ - job.prompt.size() : 0;
  const size_t maxTokens = std::min(job.params.maxTokens, room);
  // Chat output goes through the XTML output parser (channels, tool calls);
  // text output straight to the UTF-8 holdback. Content passes the stop matcher.
  std::optional<tok::ChatOutputParser> parser;
  if (job.mode == GenerationJob::Mode::Chat) parser.emplace(tok_, job.tools, job.thinking, job.callIdPrefix);
  std::vector<tok::ChatOutputEvent> events;
  tok::Utf8Holdback rawText;
  StopMatcher stop(job.params.stop);
  std::string finish = "length";
  bool calls = false;
  // Turns parser events into deltas; false once generation must end.
  auto deliver = [&]() {
    for (auto& e : events) {
      switch (e.kind) {
        case tok::ChatOutputEvent::Kind::Reasoning: push(job, text(OutputDelta::Kind::Reasoning, std::move(e.text))); break;
        case tok::ChatOutputEvent::Kind::Content:
          push(job, text(OutputDelta::Kind::Content, stop.push(e.text)));
          if (stop.stopped()) finish = "stop";
          break;
        case tok::ChatOutputEvent::Kind::ToolCall: {
          OutputDelta d;
          d.kind = OutputDelta::Kind::ToolCall;
          d.toolIndex = e.index - 1;  // OpenAI counts from 0, the XTML index from 1
          d.toolId = e.call.id;
          d.toolName = e.call.name;
          d.text = e.call.arguments;
          push(job, std::move(d));
          calls = true;
          break;
        }
        case tok::ChatOutputEvent::Kind::Done: finish = calls ? "tool_calls" : "stop"; break;
        case tok::ChatOutputEvent::Kind::Malformed:
          job.malformed = e.error.message();
          finish = calls ? "tool_calls" : "stop";
          break;
      }
    }
    events.clear();
    return finish == "length";
  };
  for (size_t i = 0; i < maxTokens; ++i) {
    if (job.cancel) {
      finish = "cancelled";
      break;
    }
    const int32_t id = sampler.sample(session_.lastLogits());
    job.usage.completionTokens += 1;
    if (parser) {
      parser->feed(static_cast<uint32_t>(id), events);
      if (!deliver()) break;
    }
    if (std::find(stopIds_.begin(), stopIds_.end(), id) != stopIds_.end()) {
      finish = calls ? "tool_calls" : "stop";
      break;
    }
    if (!parser) {
      push(job, text(OutputDelta::Kind::Content, stop.push(rawText.push(tok_.tokenBytes(static_cast<uint32_t>(id))))));
      if (stop.stopped()) {
        finish = "stop";
        break;
      }
    }
    // The last token of the limit is not fed: nobody reads its logits.
    if (i + 1 < maxTokens) session_.feed({&id, 1});
  }
  if (finish != "cancelled" && !stop.stopped()) {
    if (parser) {
      parser->finish(events);
      const std::string keep = finish;
      deliver();
      finish = keep;
    } else {
      push(job, text(OutputDelta::Kind::Content, stop.push(rawText.flush())));
    }
    push(job, text(OutputDelta::Kind::Content, stop.flush()));
  }
  job.decodeSeconds = since(t0);
  job.finishReason = finish;
}

}  // namespace k3::serve
