// Incremental UTF-8 validity, for text that arrives a token at a time: a
// token may end in the middle of a character (rare CJK and emoji are split
// across byte-level tokens), so a streaming consumer must hold those bytes
// back until the character completes, and never pass on a partial one.
// Thread-safety: the free functions are pure; a Utf8Holdback is one
// stream's (not thread-safe).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::tok {

// The UTF-8 sequence that starts at s[i]: `need` = the length its lead byte
// announces (0 when s[i] cannot start a sequence), `have` = how many of its
// bytes are present and valid (1..need; ranges as in Unicode Table 3-7, so
// overlong forms and surrogates are invalid from the second byte on).
struct Utf8Prefix {
  size_t need = 0;
  size_t have = 0;
};
Utf8Prefix utf8PrefixAt(std::string_view s, size_t i);

// Number of trailing bytes of `s` that form a valid but incomplete sequence
// (0..3): the bytes a later chunk may still complete.
size_t incompleteUtf8Tail(std::string_view s);

// Text in, valid UTF-8 out: each push returns what is final so far (invalid
// sequences replaced by U+FFFD as toValidUtf8 does), keeping an incomplete
// trailing sequence for the next push. Concatenating every push and the final
// flush gives toValidUtf8 of all the bytes.
class Utf8Holdback {
 public:
  std::string push(std::string_view bytes);
  // The end of the text: a kept tail can no longer complete -> U+FFFD.
  std::string flush();
  bool holding() const { return !tail_.empty(); }

 private:
  std::string tail_;
};

}  // namespace k3::tok
