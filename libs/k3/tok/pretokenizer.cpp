#include "k3/tok/pretokenizer.h"

namespace k3::tok {

const char* const kKimiPattern =
    R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

using namespace unicode;

constexpr uint8_t kInvalid = 0x80;  // not valid UTF-8: in no class, not even negated ones

struct Char {
  char32_t cp;
  uint8_t len;    // bytes
  uint8_t flags;  // unicode::Flag bits, or kInvalid
};

class Scanner {
 public:
  Scanner(std::string_view text, const CharClasses& classes) : s_(text), classes_(classes) {}

  size_t size() const { return s_.size(); }

  // Decodes the code point at byte `i` (< size()); invalid or truncated
  // sequences, overlongs, surrogates and values > 0x10FFFF give kInvalid.
  Char at(size_t i) const {
    uint8_t b0 = static_cast<uint8_t>(s_[i]);
    if (b0 < 0x80) return {b0, 1, classes_.of(b0)};
    size_t len;
    char32_t cp;
    char32_t min;
    if (b0 >= 0xC2 && b0 <= 0xDF) len = 2, cp = b0 & 0x1F, min = 0x80;
    else if (b0 >= 0xE0 && b0 <= 0xEF) len = 3, cp = b0 & 0x0F, min = 0x800;
    else if (b0 >= 0xF0 && b0 <= 0xF4) len = 4, cp = b0 & 0x07, min = 0x10000;
    else return {0, 1, kInvalid};
    if (i + len > s_.size()) return {0, 1, kInvalid};
    for (size_t k = 1; k < len; ++k) {
      uint8_t b = static_cast<uint8_t>(s_[i + k]);
      if ((b & 0xC0) != 0x80) return {0, 1, kInvalid};
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 1, kInvalid};
    return {cp, static_cast<uint8_t>(len), classes_.of(cp)};
  }

  // End of the maximal run, from i, of characters all having one of `flags`.
  size_t run(size_t i, uint8_t flags) const {
    while (i < s_.size()) {
      Char c = at(i);
      if (c.flags == kInvalid || !(c.flags & flags)) break;
      i += c.len;
    }
    return i;
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)? at i: the end after it, or i. Case folding
  // as in Rust regex: ASCII letters, and U+017F ſ folds to s.
  size_t contraction(size_t i) const {
    if (i >= s_.size() || s_[i] != '\'') return i;
    auto lower = [&](size_t k) -> char {
      if (k >= s_.size()) return 0;
      char c = s_[k];
      if (c >= 'A' && c <= 'Z') return static_cast<char>(c - 'A' + 'a');
      return c;
    };
    char a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' || a == 'v') && b == 'e') return i + 3;
    if (a == 'l' && b == 'l') return i + 3;
    if (i + 2 < s_.size() && s_[i + 1] == '\xC5' && s_[i + 2] == '\xBF') return i + 3;  // 'ſ
    return i;
  }

  // Rule A from j: [S1]*[S2]+ then a contraction; 0 if no match. The regex
  // backtracks S1* from its longest run to the last position where an S2
  // character starts; S2+ then runs greedily and the contraction is optional.
  size_t ruleA(size_t j) const {
    size_t k = j, lastS2 = 0;
    bool haveS2 = false;
    while (k < s_.size()) {
      Char c = at(k);
      if (c.flags == kInvalid || !(c.flags & kIsUpperLike)) break;
      if (c.flags & kIsLowerLike) lastS2 = k, haveS2 = true;
      k += c.len;
    }
    size_t start;
    if (k < s_.size() && isLowerLike(at(k))) start = k;
    else if (haveS2) start = lastS2;
    else return 0;
    return contraction(run(start, kIsLowerLike));
  }

  // Rule B from j: [S1]+[S2]* then a contraction; 0 if no match.
  size_t ruleB(size_t j) const {
    if (j >= s_.size()) return 0;
    Char c = at(j);
    if (c.flags == kInvalid || !(c.flags & kIsUpperLike)) return 0;
    return contraction(run(run(j, kIsUpperLike), kIsLowerLike));
  }

  static bool isLowerLike(Char c) { return c.flags != kInvalid && (c.flags & kIsLowerLike); }
  // [^\r\n\p{L}\p{N}]
  static bool isPrefix(Char c) {
    return c.flags != kInvalid && c.cp != '\r' && c.cp != '\n' && !(c.flags & (kIsLetter | kIsNumber));
  }
  // [^\s\p{L}\p{N}]
  static bool isPunct(Char c) { return c.flags != kInvalid && !(c.flags & (kIsSpace | kIsLetter | kIsNumber)); }

  size_t punctRun(size_t i) const {
    while (i < s_.size()) {
      Char c = at(i);
      if (!isPunct(c)) break;
      i += c.len;
    }
    while (i < s_.size() && (s_[i] == '\r' || s_[i] == '\n')) ++i;  // [\r\n]*
    return i;
  }

 private:
  std::string_view s_;
  const CharClasses& classes_;
};

}  // namespace

size_t PreTokenizer::pieceEnd(std::string_view text, size_t i) const {
  Scanner sc(text, *classes_);
  Char c = sc.at(i);
  if (c.flags == kInvalid) {  // gap: the run of invalid bytes
    size_t j = i + 1;
    while (j < text.size() && sc.at(j).flags == kInvalid) ++j;
    return j;
  }
  size_t next = i + c.len;
  // H: [\p{Han}]+
  if (c.flags & kIsHan) return sc.run(i, kIsHan);
  // A, then B, each with the optional prefix character tried first.
  bool prefix = Scanner::isPrefix(c);
  if (size_t e = prefix ? sc.ruleA(next) : 0) return e;
  if (size_t e = sc.ruleA(i)) return e;
  if (size_t e = prefix ? sc.ruleB(next) : 0) return e;
  if (size_t e = sc.ruleB(i)) return e;
  // C: \p{N}{1,3}
  if (c.flags & kIsNumber) {
    size_t j = next;
    for (int n = 1; n < 3 && j < text.size(); ++n) {
      Char d = sc.at(j);
      if (d.flags == kInvalid || !(d.flags & kIsNumber)) break;
      j += d.len;
    }
    return j;
  }
  // D: ' '?[^\s\p{L}\p{N}]+[\r\n]*
  if (c.cp == ' ' && next < text.size() && Scanner::isPunct(sc.at(next))) return sc.punctRun(next);
  if (Scanner::isPunct(c)) return sc.punctRun(i);
  // Whitespace (c is \s here: every other character matched above).
  size_t end = i, lastNewline = 0, lastStart = i;
  bool newline = false;
  while (end < text.size()) {
    Char d = sc.at(end);
    if (d.flags == kInvalid || !(d.flags & kIsSpace)) break;
    if (d.cp == '\r' || d.cp == '\n') lastNewline = end, newline = true;
    lastStart = end;
    end += d.len;
  }
  // E: \s*[\r\n]+ ends after the run's last CR/LF.
  if (newline) return lastNewline + 1;
  // F: \s+(?!\S) keeps the last space for the next piece when a non-space
  // follows; G: \s+ when only one space is left.
  if (end < text.size() && sc.at(end).flags != kInvalid && lastStart > i) return lastStart;
  return end;
}

std::vector<std::string> PreTokenizer::splitToStrings(std::string_view text) const {
  std::vector<std::string> out;
  split(text, [&](std::string_view p) { out.emplace_back(p); });
  return out;
}

}  // namespace k3::tok
