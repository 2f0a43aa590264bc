// RegexPreTokenizer: the Kimi pattern (spec 7.3) run by PCRE2 with JIT. Kept
// as an independent second implementation of PreTokenizer (tests cross-check
// the two on the corpus; `k3-tokgen bench --regex` compares their speed).
//
// PCRE2 cannot take the pattern verbatim: it has no `&&` class intersection,
// reads a bare `\p{Han}` as Script_Extensions (U+3001 、 would join a Han
// run), its UCP `\s` misses U+0085, and 10.42 has Unicode 14 tables while
// tiktoken's engine has newer ones. So every class is spelled out as explicit
// code-point ranges from unicode_tables.h (kKimiPatternPcre2()).
// Bytes that are not valid UTF-8 never match (PCRE2_MATCH_INVALID_UTF); they
// are reported as gap pieces so that encoding still round-trips.
// Thread-safety: the compiled pattern is immutable and shared; split() needs a
// Scratch, one per thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

// The PCRE2 translation of kKimiPattern (pretokenizer.h).
std::string kimiPatternPcre2();

class RegexPreTokenizer {
 public:
  RegexPreTokenizer();  // compiles and JIT-compiles kimiPatternPcre2()
  ~RegexPreTokenizer();
  RegexPreTokenizer(RegexPreTokenizer&&) noexcept;
  RegexPreTokenizer& operator=(RegexPreTokenizer&&) noexcept;

  // Per-call matching state (match data, JIT stack). One per thread at a time.
  class Scratch {
   public:
    explicit Scratch(const RegexPreTokenizer& pt);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

   private:
    friend class RegexPreTokenizer;
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
