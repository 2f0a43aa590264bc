// GPT-2 byte-level alphabet used by Hugging Face tokenizer.json (spec 7.2):
// bytes 33-126, 161-172 and 174-255 stand for themselves; the other 68 bytes,
// in increasing order, map to U+0100, U+0101, ...
// Thread-safety: immutable after construction; safe to share across threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace k3::tok {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();
  char32_t codePoint(uint8_t b) const { return map_[b]; }
  // The UTF-8 byte-level string of raw token bytes.
  std::string encode(std::string_view bytes) const;

 private:
  std::array<char32_t, 256> map_{};
};

void appendUtf8(std::string& out, char32_t cp);

}  // namespace k3::tok
