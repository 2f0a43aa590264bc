// PreTokenizer: splits text into the pieces of the Kimi pattern (spec 7.3)
// exactly as tiktoken's regex engine does. Hand-written: each alternative of
// the pattern is a small scan over code points whose classes come from a flag
// table generated from tiktoken itself (unicode_tables.h); the scans reproduce
// the regex's leftmost-first, greedy-with-backtracking result (see the .cpp).
// Faster than the PCRE2 version (regex_pretokenizer.h), which tests use as a
// cross-check. Bytes that are not valid UTF-8 (never seen by tiktoken, whose
// input is a string) match nothing: each run of them is one gap piece.
// Thread-safety: immutable (it only points at the constant class tables); safe
// to share across threads.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k3/tok/unicode_tables.h"

namespace k3::tok {

// The pattern string of tokenization_kimi.py (Rust/fancy-regex syntax), as
// written into tokenizer.json.
extern const char* const kKimiPattern;

class PreTokenizer {
 public:
  PreTokenizer() : classes_(&unicode::CharClasses::get()) {}

  // Calls emit(std::string_view piece) for each piece, in order; the pieces
  // concatenate to `text`. Lookaheads cannot see past the end of `text`.
  template <typename Emit>
  void split(std::string_view text, Emit&& emit) const {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = pieceEnd(text, pos);
      emit(text.substr(pos, end - pos));
      pos = end;
    }
  }

  std::vector<std::string> splitToStrings(std::string_view text) const;

  // End of the piece that starts at `pos` (< text.size()).
  size_t pieceEnd(std::string_view text, size_t pos) const;

 private:
  const unicode::CharClasses* classes_;
};

}  // namespace k3::tok
