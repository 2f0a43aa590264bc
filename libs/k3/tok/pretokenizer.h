// PreTokenizer: splits text into the pieces of the Kimi pattern (spec 7.3)
// exactly as tiktoken's Rust fancy-regex does, using PCRE2 with JIT.
//
// The Kimi pattern is not PCRE2 syntax, so it is translated (kimiPatternPcre2):
// - `[X&&[^\p{Han}]]` (class intersection, absent in PCRE2) becomes
//   `(?:(?!\p{sc:Han})[X])`;
// - `\p{Han}` becomes `\p{sc:Han}`: PCRE2 >= 10.40 reads a bare script name as
//   Script_Extensions (U+3001 、 would join a Han run), Rust regex as Script;
// - `\s` becomes the explicit Unicode White_Space set: PCRE2's UCP `\s` is
//   \p{Z} plus ASCII controls and misses U+0085, which Rust includes.
// Bytes that are not valid UTF-8 never match (PCRE2_MATCH_INVALID_UTF); they
// are reported as gap pieces so that encoding still round-trips.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

// The pattern string of tokenization_kimi.py (Rust/fancy-regex syntax).
extern const char* const kKimiPattern;
// Its PCRE2 translation, used by PreTokenizer.
extern const char* const kKimiPatternPcre2;

class PreTokenizer {
 public:
  PreTokenizer();  // compiles and JIT-compiles kKimiPatternPcre2
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Per-call matching state (match data, JIT stack). One per thread at a time.
  class Scratch {
   public:
    explicit Scratch(const PreTokenizer& pt);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class PreTokenizer;
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };

  // Calls emit(std::string_view piece) for each piece, in order; the pieces
  // concatenate to `text`. The lookahead cannot see past the end of `text`.
  template <typename Emit>
  void split(std::string_view text, Scratch& scratch, Emit&& emit) const {
    size_t pos = 0;
    while (pos < text.size()) {
      size_t start = 0, end = 0;
      if (!next(text, pos, scratch, start, end)) {
        emit(text.substr(pos));
        return;
      }
      if (start > pos) emit(text.substr(pos, start - pos));  // invalid UTF-8 gap
      emit(text.substr(start, end - start));
      pos = end;
    }
  }

  // Convenience for tests and tools.
  std::vector<std::string> splitToStrings(std::string_view text) const;

 private:
  // Finds the next match at or after `pos`; false when there is none.
  bool next(std::string_view text, size_t pos, Scratch& scratch, size_t& start, size_t& end) const;

  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace k3::tok
