#include "k3/serve/sequence_decoder.h"

#include <algorithm>
#include <chrono>

namespace k3::serve {

namespace {

OutputDelta text(OutputDelta::Kind kind, std::string t) {
  OutputDelta d;
  d.kind = kind;
  d.text = std::move(t);
  return d;
}

void push(GenerationJob& job, OutputDelta d) {
  if (d.text.empty() && (d.kind == OutputDelta::Kind::Reasoning || d.kind == OutputDelta::Kind::Content)) return;
  {
    std::lock_guard<std::mutex> lock(job.m);
    tok::ChatMessage& r = job.reply;
    if (d.kind == OutputDelta::Kind::Reasoning) r.reasoning += d.text;
    if (d.kind == OutputDelta::Kind::Content) r.content.empty() ? r.content.push_back(d.text) : void(r.content[0] += d.text);
    if (d.kind == OutputDelta::Kind::ToolCall) {
      if (r.toolCalls.size() <= static_cast<size_t>(d.toolIndex)) r.toolCalls.resize(static_cast<size_t>(d.toolIndex) + 1);
      tok::ToolCall& c = r.toolCalls[static_cast<size_t>(d.toolIndex)];
      if (!d.toolName.empty()) c.name = d.toolName;
      c.arguments += d.text;
    }
    job.pending.push_back(std::move(d));
  }
  job.cv.notify_all();
}

}  // namespace

SequenceDecoder::SequenceDecoder(GenerationJob& job, const tok::Tokenizer& tok, std::span<const int32_t> stopIds,
                                 size_t vocabSize, size_t contextSize, const tok::GrammarVocab* grammarVocab)
    : job_(job),
      tok_(tok),
      stopIds_(stopIds.begin(), stopIds.end()),
      processor_(job.params.processing, vocabSize),
      sampler_(job.params.sampling, vocabSize),
      stop_(job.params.stop) {
  if (job.grammar && grammarVocab) mask_.emplace(*grammarVocab, job.grammar);
  if (processor_.active()) processor_.addPrompt(job.prompt);  // the repetition penalty counts the prompt too
  if (processor_.active() || mask_) adjusted_.resize(vocabSize);
  if (job.params.logprobs) logprobs_.emplace(vocabSize);
  const size_t room = contextSize > job.prompt.size() ? contextSize - job.prompt.size() : 0;
  maxTokens_ = std::min(job.params.maxTokens, room);
  // Chat output goes through the XTML output parser (channels, tool calls);
  // text output straight to the UTF-8 holdback. Content passes the stop matcher.
  if (job.mode == GenerationJob::Mode::Chat) parser_.emplace(tok_, job.tools, job.thinking, job.callIdPrefix);
}

int32_t SequenceDecoder::pick(const float* logits) {
  // Untouched logits go to the sampler as they are: with every option off,
  // greedy and seeded results are the bare sampler's.
  if (processor_.active() || mask_) {
    std::copy(logits, logits + adjusted_.size(), adjusted_.begin());
    if (processor_.active()) processor_.apply(adjusted_.data());
    logits = adjusted_.data();
  }
  if (mask_) {  // the grammar mask, on the copy: ids that would leave the grammar get -inf
    const auto t0 = std::chrono::steady_clock::now();
    mask_->setBudget(maxTokens_ - produced_);  // the answer must close within the tokens left
    const bool any = mask_->apply(adjusted_.data(), adjusted_.size());
    job_.maskSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    job_.maskedTokens += 1;
    // Nothing fits: the room left is below the shortest completion (the
    // prompt left less than max_tokens). Never sample outside the grammar.
    if (!any) {
      grammarCut_ = true;
      return stopIds_.empty() ? 0 : stopIds_.back();
    }
  }
  const int32_t id = sampler_.sample(logits);
  if (logprobs_) lastLogprob_ = logprobs_->compute(logits, id, job_.params.topLogprobs);
  return id;
}

void SequenceDecoder::deliver() {
  for (auto& e : events_) {
    switch (e.kind) {
      case tok::ChatOutputEvent::Kind::Reasoning: push(job_, text(OutputDelta::Kind::Reasoning, std::move(e.text))); break;
      case tok::ChatOutputEvent::Kind::Content:
        push(job_, text(OutputDelta::Kind::Content, stop_.push(e.text)));
        if (stop_.stopped()) finish_ = "stop";
        break;
      case tok::ChatOutputEvent::Kind::ToolCall: {
        OutputDelta d;
        d.kind = OutputDelta::Kind::ToolCall;
        d.toolIndex = e.index - 1;  // OpenAI counts from 0, the XTML index from 1
        d.toolId = e.call.id;
        d.toolName = e.call.name;
        d.text = e.call.arguments;
        job_.mistypedArguments += e.mistyped;
        push(job_, std::move(d));
        calls_ = true;
        break;
      }
      case tok::ChatOutputEvent::Kind::Done: finish_ = calls_ ? "tool_calls" : "stop"; break;
      case tok::ChatOutputEvent::Kind::Malformed:
        job_.malformed = e.error.message();
        finish_ = "malformed";  // said as such, never "stop" (docs/SERVE.md)
        break;
    }
  }
  events_.clear();
}

bool SequenceDecoder::accept(int32_t id) {
  if (grammarCut_) return false;  // finish_ stays "length"
  produced_ += 1;
  if (mask_) mask_->accept(static_cast<uint32_t>(id));
  job_.usage.completionTokens += 1;
  processor_.addGenerated(id);
  if (lastLogprob_) {
    OutputDelta d;
    d.kind = OutputDelta::Kind::Logprob;
    d.logprob.token = tok_.tokenBytes(static_cast<uint32_t>(id));
    d.logprob.logprob = lastLogprob_->logprob;
    for (const auto& [alt, lp] : lastLogprob_->top) d.logprob.top.emplace_back(tok_.tokenBytes(static_cast<uint32_t>(alt)), lp);
    lastLogprob_.reset();
    push(job_, std::move(d));
  }
  if (parser_) {
    parser_->feed(static_cast<uint32_t>(id), events_);
    deliver();
    if (finish_ != "length") return false;
  }
  if (std::find(stopIds_.begin(), stopIds_.end(), id) != stopIds_.end()) {
    finish_ = calls_ ? "tool_calls" : "stop";
    return false;
  }
  if (!parser_) {
    push(job_, text(OutputDelta::Kind::Content, stop_.push(rawText_.push(tok_.tokenBytes(static_cast<uint32_t>(id))))));
    if (stop_.stopped()) {
      finish_ = "stop";
      return false;
    }
  }
  // The last token of the limit is not fed: nobody reads its logits.
  return produced_ < maxTokens_;
}

void SequenceDecoder::finish(bool cancelled) {
  if (cancelled) {
    job_.finishReason = "cancelled";
    return;
  }
  if (!stop_.stopped()) {
    if (parser_) {
      parser_->finish(events_);
      const std::string keep = finish_;
      deliver();
      finish_ = keep;
    } else {
      push(job_, text(OutputDelta::Kind::Content, stop_.push(rawText_.flush())));
    }
    push(job_, text(OutputDelta::Kind::Content, stop_.flush()));
  }
  job_.finishReason = finish_;
}

}  // namespace k3::serve
