// What a token mask needs to know about a vocabulary, computed once per
// tokenizer and shared by every constrained generation: the trie of all
// ranks; for the common state "inside a string" (JSON or raw), which tokens
// are plain text there (whole UTF-8 characters; for JSON no quote, backslash
// or control byte) and how many characters each holds, plus a trie of the
// others, so a mask inside a string walks only those; and the ids of the
// XTML structure tokens, the only added tokens a grammar can allow.
// Building it for the Kimi vocabulary (163,584 ranks) takes a few tenths of
// a second.
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <vector>

#include "k3/tok/token_trie.h"
#include "k3/tok/tokenizer.h"

namespace k3::tok {

class GrammarVocab {
 public:
  explicit GrammarVocab(const Tokenizer& tok);

  struct Special {
    uint32_t id;
    int sym;  // kSymOpen … kSymEndOfMsg
  };
  // A string state's view: plainChars[id] = characters of a plain token, -1 otherwise.
  struct StringView {
    std::vector<int16_t> plainChars;
    TokenTrie others;
  };

  const TokenTrie& all() const { return all_; }
  const StringView& jsonString() const { return json_; }
  const StringView& rawString() const { return raw_; }
  const std::vector<Special>& specials() const { return specials_; }
  const Tokenizer& tokenizer() const { return tok_; }
  size_t vocabSize() const { return tok_.vocabSize(); }
  size_t numBase() const { return tok_.numBase(); }

 private:
  const Tokenizer& tok_;
  TokenTrie all_;
  StringView json_, raw_;
  std::vector<Special> specials_;
};

}  // namespace k3::tok
