// One sequence's output side, token by token: picks its next token from the
// logits of its last position, then turns that token into deltas (XTML output
// parser for chat, UTF-8 holdback for text, the stop matcher for content) and
// decides whether generation goes on. It never touches the model: whoever
// owns the batch (the engine's scheduler) feeds the accepted token back.
//
// The seam between batching and the API contract: everything that reads one
// sequence's logits lives behind pick(), in this order: copy → logit_bias →
// penalties (model::LogitProcessor) → grammar mask → logprobs (log-softmax
// of what is sampled from, before temperature) → temperature/top-k/top-p/
// min-p → draw (model::Sampler); everything that reads the sampled token
// behind accept(). A batch of sequences is one SequenceDecoder per row.
// Thread-safety: one per generation, used from the engine's worker only; it
// pushes deltas into its job under the job's lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "k3/model/logit_processors.h"
#include "k3/model/sampler.h"
#include "k3/model/token_logprobs.h"
#include "k3/serve/generation_job.h"
#include "k3/serve/stop_matcher.h"
#include "k3/tok/chat_output_parser.h"
#include "k3/tok/grammar_mask.h"
#include "k3/tok/tokenizer.h"
#include "k3/tok/utf8_stream.h"

namespace k3::serve {

class SequenceDecoder {
 public:
  // contextSize: the session's capacity; max tokens are clamped to the room
  // the prompt leaves.
  // grammarVocab: the tokenizer's mask tables, needed when the job has a
  // grammar (its mask then applies in pick(), its matcher advances in accept()).
  SequenceDecoder(GenerationJob& job, const tok::Tokenizer& tok, std::span<const int32_t> stopIds,
                  size_t vocabSize, size_t contextSize, const tok::GrammarVocab* grammarVocab = nullptr);

  // Tokens this generation may still produce (0: nothing to pick).
  size_t maxTokens() const { return maxTokens_; }
  // The next token, from this sequence's logits ([vocabSize]).
  int32_t pick(const float* logits);
  // Takes the picked token: counts it, delivers its output. True when
  // generation continues, i.e. the caller must feed `id` and pick again.
  bool accept(int32_t id);
  // Ends the generation (after accept() returned false, the limit, or a
  // cancel): flushes what the parser, the holdback and the stop matcher
  // hold and sets the job's finish reason.
  void finish(bool cancelled);

 private:
  void deliver();  // parser events → deltas; sets finish_ on an end
  GenerationJob& job_;
  const tok::Tokenizer& tok_;
  std::vector<int32_t> stopIds_;
  size_t maxTokens_ = 0;
  size_t produced_ = 0;
  model::LogitProcessor processor_;
  model::Sampler sampler_;
  std::optional<tok::GrammarMask> mask_;              // the job's grammar
  bool grammarCut_ = false;                           // no token could complete the grammar in the room left
  std::optional<model::LogprobCalculator> logprobs_;  // when the request asked for them
  std::optional<model::TokenLogprob> lastLogprob_;    // pick()'s, delivered by accept()
  std::vector<float> adjusted_;                       // the copy pick() works on
  std::optional<tok::ChatOutputParser> parser_;
  std::vector<tok::ChatOutputEvent> events_;
  tok::Utf8Holdback rawText_;
  StopMatcher stop_;
  std::string finish_ = "length";
  bool calls_ = false;
};

}  // namespace k3::serve
