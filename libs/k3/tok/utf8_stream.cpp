#include "k3/tok/utf8_stream.h"

#include <algorithm>
#include <cstdint>

#include "k3/tok/id_text.h"

namespace k3::tok {

Utf8Prefix utf8PrefixAt(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b = at(i);
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b < 0x80) need = 1;
  else if (b >= 0xC2 && b <= 0xDF) need = 2;
  else if (b == 0xE0) need = 3, lo = 0xA0;
  else if (b == 0xED) need = 3, hi = 0x9F;
  else if (b >= 0xE1 && b <= 0xEF) need = 3;
  else if (b == 0xF0) need = 4, lo = 0x90;
  else if (b == 0xF4) need = 4, hi = 0x8F;
  else if (b >= 0xF1 && b <= 0xF3) need = 4;
  if (need == 0) return {0, 0};
  size_t have = 1;
  while (have < need && i + have < s.size()) {
    const uint8_t c = at(i + have);
    const bool valid = have == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!valid) break;
    ++have;
  }
  return {need, have};
}

size_t incompleteUtf8Tail(std::string_view s) {
  // A lead byte is never a continuation byte, so the candidate sequence
  // starts at the last non-continuation byte among the final three.
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const auto b = static_cast<uint8_t>(s[s.size() - k]);
    if (b >= 0x80 && b <= 0xBF) continue;
    const Utf8Prefix p = utf8PrefixAt(s, s.size() - k);
    return p.need > k && p.have == k ? k : 0;
  }
  return 0;
}

std::string Utf8Holdback::push(std::string_view bytes) {
  if (tail_.empty() && std::all_of(bytes.begin(), bytes.end(), [](char c) { return static_cast<uint8_t>(c) < 0x80; }))
    return std::string(bytes);  // the common case, without copies
  tail_.append(bytes);
  const size_t keep = incompleteUtf8Tail(tail_);
  std::string out = toValidUtf8(std::string_view(tail_).substr(0, tail_.size() - keep));
  tail_.erase(0, tail_.size() - keep);
  return out;
}

std::string Utf8Holdback::flush() {
  std::string out = toValidUtf8(tail_);
  tail_.clear();
  return out;
}

}  // namespace k3::tok
