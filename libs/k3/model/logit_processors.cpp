#include "k3/model/logit_processors.h"

#include "k3/io/error.h"

namespace k3::model {

void checkLogitProcessorOptions(const LogitProcessorOptions& o, size_t vocabSize) {
  // !(x >= lo && x <= hi) is also true for NaN.
  if (!(o.presencePenalty >= -kMaxPenalty && o.presencePenalty <= kMaxPenalty))
    fail(ErrorKind::Usage, "--presence-penalty ", o.presencePenalty, ": must be a number in [-2, 2] (0 = off)");
  if (!(o.frequencyPenalty >= -kMaxPenalty && o.frequencyPenalty <= kMaxPenalty))
    fail(ErrorKind::Usage, "--frequency-penalty ", o.frequencyPenalty, ": must be a number in [-2, 2] (0 = off)");
  if (!(o.repetitionPenalty >= kMinRepetitionPenalty && o.repetitionPenalty <= kMaxRepetitionPenalty))
    fail(ErrorKind::Usage, "--repeat-penalty ", o.repetitionPenalty, ": must be a number in [", kMinRepetitionPenalty,
         ", ", kMaxRepetitionPenalty, "] (1 = off)");
  for (const auto& [id, b] : o.logitBias) {
    if (id < 0 || static_cast<size_t>(id) >= vocabSize)
      fail(ErrorKind::Usage, "--logit-bias ", id, ": not a token id of this model (vocabulary ", vocabSize, ")");
    if (!(b >= -kMaxLogitBias && b <= kMaxLogitBias))
      fail(ErrorKind::Usage, "--logit-bias ", id, "=", b, ": the bias must be a number in [-100, 100]");
  }
}

LogitProcessor::LogitProcessor(const LogitProcessorOptions& o, size_t vocabSize) : opts_(o) {
  if (opts_.presencePenalty != 0.0f || opts_.frequencyPenalty != 0.0f || opts_.repetitionPenalty != 1.0f) {
    outputCount_.assign(vocabSize, 0);
    seen_.assign(vocabSize, 0);
  }
}

void LogitProcessor::touch(int32_t id) {
  if (seen_.empty() || id < 0 || static_cast<size_t>(id) >= seen_.size()) return;
  if (!seen_[static_cast<size_t>(id)]) {
    seen_[static_cast<size_t>(id)] = 1;
    touched_.push_back(id);
  }
}

void LogitProcessor::addPrompt(std::span<const int32_t> ids) {
  for (int32_t id : ids) touch(id);
}

void LogitProcessor::addGenerated(int32_t id) {
  touch(id);
  if (!outputCount_.empty() && id >= 0 && static_cast<size_t>(id) < outputCount_.size())
    outputCount_[static_cast<size_t>(id)] += 1;
}

void LogitProcessor::apply(float* logits) const {
  for (const auto& [id, b] : opts_.logitBias) logits[id] += b;
  const float r = opts_.repetitionPenalty;
  for (int32_t id : touched_) {
    float& l = logits[id];
    if (r != 1.0f) l = l > 0.0f ? l / r : l * r;
    const uint32_t n = outputCount_[static_cast<size_t>(id)];
    l -= opts_.frequencyPenalty * static_cast<float>(n);
    if (n > 0) l -= opts_.presencePenalty;
  }
}

}  // namespace k3::model
