// The token mask of a grammar: which vocabulary ids may come next so that the
// output can still complete, computed per step by walking the vocabulary's
// token trie (grammar_vocab.h) through the grammar matcher from its current
// state, and the matcher advanced by the token actually chosen. Added tokens
// other than the XTML structure tokens are never allowed; neither are ids
// outside the tokenizer (a model vocabulary may be larger).
// Cost: free text (reasoning, unconstrained content) allows every rank
// without a walk; inside a string the plain tokens are allowed by their
// character count and only the others walked; elsewhere the walk visits the
// trie nodes whose byte prefix the grammar allows (few: structure, numbers).
// Thread-safety: one per generation; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "k3/tok/grammar_matcher.h"
#include "k3/tok/grammar_vocab.h"

namespace k3::tok {

class GrammarMask {
 public:
  GrammarMask(const GrammarVocab& vocab, std::shared_ptr<const Grammar> g);

  // allowed[id] = 1 for the ids that may come next (size vocabSize()); false
  // when none may (the grammar is complete).
  bool compute(std::vector<uint8_t>& allowed);
  // Sets logits[id] = -inf for every id of [0, n) not allowed; false when
  // none is allowed (logits untouched).
  bool apply(float* logits, size_t n);
  // Tokens the output may still take, this one included (default: no
  // limit). A token is then allowed only if the grammar can still complete
  // within the rest, so a constrained answer ends before the limit cuts it
  // (unless the limit is below the shortest completion: then it is ignored).
  void setBudget(size_t tokens) { budget_ = tokens; }
  // Advances by the chosen token; false (nothing changes) when it may not come next.
  bool accept(uint32_t id);
  // The output so far is a complete sentence of the grammar.
  bool complete() { return matcher_.accepting(); }

 private:
  bool walk(const TokenTrie& trie, std::vector<uint8_t>& allowed, size_t budget);

  const GrammarVocab& vocab_;
  GrammarMatcher matcher_;
  std::vector<GrammarState> states_;  // per trie depth
  std::vector<size_t> marks_;         // arena mark per trie depth
  std::vector<uint8_t> allowed_;
  size_t budget_ = SIZE_MAX;
};

}  // namespace k3::tok
