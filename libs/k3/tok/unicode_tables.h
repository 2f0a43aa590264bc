// Character classes of the Kimi pattern (spec 7.3) as code-point ranges,
// generated from the tiktoken oracle itself (scripts/node/tok_unicode_tables.mjs)
// so that Unicode version, Script=Han and `\s` agree with tiktoken's engine,
// plus a per-code-point flag table built from them.
// Thread-safety: constant tables; CharClasses::get() builds its table once (a
// function-local static), safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::tok::unicode {

struct CodePointRange {
  char32_t lo, hi;  // inclusive
};

extern const CodePointRange kHan[];        // [\p{Han}] (Script, not Script_Extensions)
extern const size_t kHanCount;
extern const CodePointRange kUpperLike[];  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]
extern const size_t kUpperLikeCount;
extern const CodePointRange kLowerLike[];  // [\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]
extern const size_t kLowerLikeCount;
extern const CodePointRange kLetter[];     // \p{L}
extern const size_t kLetterCount;
extern const CodePointRange kNumber[];     // \p{N}
extern const size_t kNumberCount;
extern const CodePointRange kSpace[];      // \s (Unicode White_Space)
extern const size_t kSpaceCount;

enum Flag : uint8_t {
  kIsHan = 1,
  kIsUpperLike = 2,
  kIsLowerLike = 4,
  kIsLetter = 8,
  kIsNumber = 16,
  kIsSpace = 32,
};

// Flags of every code point 0..0x10FFFF; built once, immutable.
class CharClasses {
 public:
  static const CharClasses& get();
  uint8_t of(char32_t cp) const { return flags_[cp]; }

 private:
  CharClasses();
  std::vector<uint8_t> flags_;
};

}  // namespace k3::tok::unicode
