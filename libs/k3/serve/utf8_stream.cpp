#include "k3/serve/utf8_stream.h"

namespace k3::serve {

namespace {
// Length a UTF-8 lead byte announces (1 for ASCII and for stray bytes).
size_t sequenceLength(unsigned char c) {
  if (c >= 0xF0 && c <= 0xF4) return 4;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  return 1;
}
}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  held_.append(bytes);
  // Look back at most 3 bytes for a lead byte whose sequence is incomplete.
  size_t cut = held_.size();
  for (size_t back = 1; back <= 3 && back <= held_.size(); ++back) {
    const unsigned char c = static_cast<unsigned char>(held_[held_.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking
    if (sequenceLength(c) > back) cut = held_.size() - back;
    break;
  }
  std::string out = held_.substr(0, cut);
  held_.erase(0, cut);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace k3::serve
