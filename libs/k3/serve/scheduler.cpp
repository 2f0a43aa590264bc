#include "k3/serve/scheduler.h"

#include <algorithm>
#include <cstdio>

#include "k3/io/error.h"

namespace k3::serve {

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

size_t commonPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<size_t>(std::mismatch(a.begin(), a.begin() + static_cast<ptrdiff_t>(n), b.begin()).first -
                             a.begin());
}

}  // namespace

Scheduler::Scheduler(model::ModelRunner& runner, const tok::Tokenizer& tok, std::vector<int32_t> stopIds,
                     StateCache& cache, ReplyIdMemory* replies, size_t parallel, size_t batchRows,
                     size_t contextSize)
    : runner_(runner), tok_(tok), stopIds_(std::move(stopIds)), cache_(cache), replies_(replies), batchRows_(batchRows),
      ctx_(contextSize), vocab_(static_cast<size_t>(runner.weights().config().vocabSize)) {
  if (parallel == 0) fail(ErrorKind::Usage, "--parallel 0: must be at least 1");
  if (batchRows < parallel)
    fail(ErrorKind::Usage, "--batch-tokens ", batchRows, " is less than --parallel ", parallel,
         ": every sequence in flight feeds a token each step");
  if (batchRows > runner.maxRows())
    fail(ErrorKind::Internal, "Scheduler: ", batchRows, " rows per step, the runner holds ", runner.maxRows());
  slots_.reserve(parallel);
  for (size_t i = 0; i < parallel; ++i) slots_.emplace_back(runner.weights().config(), contextSize);
  logits_.resize(parallel * vocab_);
  batch_.reserve(parallel);
  rowSlots_.reserve(parallel);
}

void Scheduler::admit(std::shared_ptr<GenerationJob> job) {
  // The free slot whose state shares the longest prefix with the prompt
  // (its live state and the checkpoints that rely on its MLA rows).
  Slot* slot = nullptr;
  size_t shared = 0;
  for (Slot& s : slots_) {
    if (s.job) continue;
    const size_t n = commonPrefix(s.state.tokens, job->prompt);
    if (!slot || n > shared) slot = &s, shared = n;
  }
  if (!slot) fail(ErrorKind::Internal, "Scheduler::admit: no free slot");
  Slot& s = *slot;
  s.job = std::move(job);
  GenerationJob& j = *s.job;
  ++active_;
  s.joinedAt = admitted_++;
  s.joined = Clock::now();
  s.fed = s.produced = 0;
  s.nextUnfed = false;
  j.queueSeconds = std::chrono::duration<double>(s.joined - j.enqueued).count();
  j.usage.promptTokens = j.prompt.size();
  if (j.cancel) return leave(s, true, "", leftEarly_);
  if (j.prompt.empty() || j.prompt.size() > ctx_)
    return leave(s, false, "a prompt of " + std::to_string(j.prompt.size()) + " tokens (the context holds " +
                               std::to_string(ctx_) + ")", leftEarly_);
  try {
    s.fed = cache_.resume(s.state, j.prompt);
  } catch (const std::exception& e) {
    s.state.reset();
    return leave(s, false, e.what(), leftEarly_);
  }
  j.usage.cachedTokens = s.fed;
  if (s.fed == j.prompt.size()) startDecoding(s);  // resume() returns the whole prompt only with its logits
}

void Scheduler::startDecoding(Slot& s) {
  s.job->prefillSeconds = since(s.joined);
  if (s.job->grammar && !grammarVocab_) grammarVocab_ = std::make_unique<tok::GrammarVocab>(tok_);  // once, at the first constrained job
  s.decoder.emplace(*s.job, tok_, stopIds_, vocab_, ctx_, grammarVocab_.get());
  s.decodeStart = Clock::now();
  s.produced = 0;
}

void Scheduler::leave(Slot& s, bool cancelled, std::string error, std::vector<FinishedJob>& out) {
  GenerationJob& j = *s.job;
  if (s.decoder) {
    s.decoder->finish(cancelled);
    j.decodeSeconds = since(s.decodeStart);
    if (!cancelled && error.empty()) replyEnded(s);
  } else {
    j.prefillSeconds = since(s.joined);
    if (cancelled) j.finishReason = "cancelled";
  }
  s.decoder.reset();  // it refers to the job
  out.push_back({std::move(s.job), std::move(error)});
  s.job.reset();
  --active_;
}

void Scheduler::replyEnded(Slot& s) {
  GenerationJob& j = *s.job;
  try {
    cache_.checkpoint(s.state);  // the end of the reply: the next turn starts here
    if (!replies_ || j.mode != GenerationJob::Mode::Chat) return;
    // What the model wrote: the tokens fed after the prompt, then the last one picked.
    std::vector<int32_t> generated(s.state.tokens.begin() + static_cast<ptrdiff_t>(j.prompt.size()), s.state.tokens.end());
    if (s.nextUnfed) generated.push_back(s.next);
    tok::ChatMessage reply;
    {
      std::lock_guard<std::mutex> lock(j.m);
      reply = j.reply;
    }
    reply.role = "assistant";
    replies_->remember(tok_, reply, j.thinking, generated);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[k3-serve] state cache: the end of a reply was not kept: %s\n", e.what());
  }
}

void Scheduler::cancelAll() {
  for (Slot& s : slots_)
    if (s.job) s.job->cancel = true;
}

std::vector<FinishedJob> Scheduler::step() {
  std::vector<FinishedJob> out;
  out.swap(leftEarly_);
  batch_.clear();
  rowSlots_.clear();
  size_t rows = 0;
  // 1. Decode: each sequence picks its next token from its own logits; one
  // row each, unless it is done.
  for (Slot& s : slots_) {
    if (!s.job || !s.decoder) continue;
    if (s.job->cancel) {
      leave(s, true, "", out);
      continue;
    }
    try {
      if (s.produced == s.decoder->maxTokens()) {
        leave(s, false, "", out);
        continue;
      }
      s.next = s.decoder->pick(s.state.lastLogits.data());
      ++s.produced;
      if (!s.decoder->accept(s.next) || s.produced == s.decoder->maxTokens()) {
        s.nextUnfed = true;
        leave(s, false, "", out);  // its last token need not be fed
        continue;
      }
    } catch (const std::exception& e) {
      leave(s, false, e.what(), out);
      continue;
    }
    batch_.push_back({&s.state, std::span<const int32_t>(&s.next, 1), 1});
    rowSlots_.push_back(&s);
    ++rows;
  }
  decodeRows_ += rows;
  // 2. Prefill: prompts still being fed, oldest first, a piece each while rows remain.
  std::vector<Slot*> waiting;
  for (Slot& s : slots_)
    if (s.job && !s.decoder) waiting.push_back(&s);
  std::sort(waiting.begin(), waiting.end(), [](const Slot* a, const Slot* b) { return a->joinedAt < b->joinedAt; });
  for (Slot* s : waiting) {
    if (s->job->cancel) {
      leave(*s, true, "", out);
      continue;
    }
    const std::vector<int32_t>& prompt = s->job->prompt;
    const size_t n = std::min(batchRows_ - rows, prompt.size() - s->fed);
    if (n == 0) continue;
    const bool completes = s->fed + n == prompt.size();
    batch_.push_back({&s->state, std::span<const int32_t>(prompt).subspan(s->fed, n), completes ? 1u : 0u});
    rowSlots_.push_back(s);
    rows += n;
    prefillRows_ += n;
  }
  if (batch_.empty()) return out;
  // 3. One forward over every row.
  try {
    runner_.run(batch_, logits_.data(), &phases_);
  } catch (const std::exception& e) {
    for (Slot* s : rowSlots_) {
      s->state.reset();  // a forward that failed half-way leaves no usable state
      leave(*s, false, e.what(), out);
    }
    return out;
  }
  ++steps_;
  rows_ += rows;
  // 4. Prompts fed to their end: checkpoint, decode from the next step.
  for (size_t b = 0; b < batch_.size(); ++b) {
    Slot& s = *rowSlots_[b];
    if (s.decoder) continue;
    s.fed += batch_[b].ids.size();
    if (s.fed < s.job->prompt.size()) continue;
    cache_.checkpoint(s.state);
    startDecoding(s);
  }
  return out;
}

std::vector<SlotReport> Scheduler::reports() const {
  std::vector<SlotReport> r(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (!s.job) continue;
    r[i].state = s.decoder ? "decode" : "prefill";
    r[i].promptTokens = s.job->prompt.size();
    r[i].fedTokens = s.fed;
    r[i].cachedTokens = s.job->usage.cachedTokens;
    r[i].generatedTokens = s.produced;
    const double secs = s.decoder ? since(s.decodeStart) : 0.0;
    r[i].tokensPerSecond = secs > 0 ? static_cast<double>(s.produced) / secs : 0.0;
  }
  return r;
}

}  // namespace k3::serve
