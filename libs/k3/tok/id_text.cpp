#include "k3/tok/id_text.h"

#include "k3/io/error.h"
#include "k3/tok/byte_level.h"
#include "k3/tok/hf_tokenizer_json.h"

namespace k3::tok {

std::string formatIds(const std::vector<uint32_t>& ids, bool json) {
  std::string out = json ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += json ? "," : " ";
    out += std::to_string(ids[i]);
  }
  if (json) out += "]";
  return out;
}

std::vector<uint32_t> parseIds(std::string_view text) {
  std::vector<uint32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']') {
      ++i;
      continue;
    }
    if (c < '0' || c > '9') fail(ErrorKind::Usage, "token ids: unexpected character '", c, "' at offset ", i);
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + uint64_t(text[i] - '0');
      if (v > UINT32_MAX) fail(ErrorKind::Usage, "token ids: id too large at offset ", i);
      ++i;
    }
    ids.push_back(static_cast<uint32_t>(v));
  }
  return ids;
}

std::string toValidUtf8(std::string_view s) {
  // Unicode "maximal subpart" replacement (as Rust's from_utf8_lossy): each
  // maximal prefix of a valid sequence that is cut short becomes one U+FFFD.
  std::string out;
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  while (i < s.size()) {
    uint8_t b = at(i);
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b < 0x80) len = 1;
    else if (b >= 0xC2 && b <= 0xDF) len = 2;
    else if (b == 0xE0) len = 3, lo = 0xA0;
    else if (b == 0xED) len = 3, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) len = 3;
    else if (b == 0xF0) len = 4, lo = 0x90;
    else if (b == 0xF4) len = 4, hi = 0x8F;
    else if (b >= 0xF1 && b <= 0xF3) len = 4;
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    size_t ok = 1;
    while (ok < len && i + ok < s.size()) {
      uint8_t c = at(i + ok);
      bool valid = ok == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
      if (!valid) break;
      ++ok;
    }
    if (ok == len) {
      out.append(s.substr(i, len));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += ok;
  }
  return out;
}

std::string decodeJson(std::string_view bytes) {
  std::string out = "{\"text\": ";
  appendJsonString(out, toValidUtf8(bytes));
  out += "}";
  return out;
}

}  // namespace k3::tok
