#include "k3/tok/unicode_tables.h"

namespace k3::tok::unicode {

CharClasses::CharClasses() : flags_(0x110000, 0) {
  auto mark = [&](const CodePointRange* r, size_t n, uint8_t flag) {
    for (size_t i = 0; i < n; ++i)
      for (char32_t c = r[i].lo; c <= r[i].hi; ++c) flags_[c] |= flag;
  };
  mark(kHan, kHanCount, kIsHan);
  mark(kUpperLike, kUpperLikeCount, kIsUpperLike);
  mark(kLowerLike, kLowerLikeCount, kIsLowerLike);
  mark(kLetter, kLetterCount, kIsLetter);
  mark(kNumber, kNumberCount, kIsNumber);
  mark(kSpace, kSpaceCount, kIsSpace);
}

const CharClasses& CharClasses::get() {
  static const CharClasses table;  // immutable after the thread-safe first call
  return table;
}

}  // namespace k3::tok::unicode
