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
  std::string out;
  size_t i = 0;
  auto cont = [&](size_t k) { return k < s.size() && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80; };
  while (i < s.size()) {
    uint8_t b = static_cast<uint8_t>(s[i]);
    size_t len = 0;
    char32_t cp = 0;
    if (b < 0x80) len = 1, cp = b;
    else if (b >= 0xC2 && b <= 0xDF) len = 2, cp = b & 0x1F;
    else if (b >= 0xE0 && b <= 0xEF) len = 3, cp = b & 0x0F;
    else if (b >= 0xF0 && b <= 0xF4) len = 4, cp = b & 0x07;
    size_t ok = len ? 1 : 0;
    while (ok < len && cont(i + ok)) cp = (cp << 6) | (static_cast<uint8_t>(s[i + ok]) & 0x3F), ++ok;
    bool valid = len && ok == len && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) &&
                 !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
    if (valid) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      i += ok ? ok : 1;
    }
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
