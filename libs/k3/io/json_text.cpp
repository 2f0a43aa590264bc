#include "k3/io/json_text.h"

#include <cstdint>
#include <cstdio>

namespace k3 {
namespace {

void appendU16(std::string& out, uint32_t cp) {
  char buf[16];  // 7 used; room for any uint32_t keeps -Wformat-truncation quiet
  std::snprintf(buf, sizeof buf, "\\u%04x", cp);
  out += buf;
}

// Decodes one UTF-8 sequence at s[i]; returns the code point (U+FFFD on error)
// and advances i.
uint32_t decodeUtf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  int len = b0 >= 0xF0 && b0 < 0xF8 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC2 && b0 < 0xE0 ? 2 : 0;
  if (len == 0 || i + static_cast<size_t>(len) > s.size()) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += static_cast<size_t>(len);
  const uint32_t minCp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  if (cp < minCp || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0xFFFD;
  return cp;
}

// Escapes an ASCII byte as json.dumps does (both ensure_ascii settings).
void appendAsciiEscaped(std::string& out, uint8_t c) {
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (c < 0x20) appendU16(out, c);
      else out += static_cast<char>(c);
  }
}

}  // namespace

void appendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      if (c == 0x7F) appendU16(out, c);  // json.dumps escapes all but ' '..'~' with ensure_ascii
      else appendAsciiEscaped(out, c);
      continue;
    }
    uint32_t cp = decodeUtf8(s, i);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      appendU16(out, 0xD800 + (cp >> 10));
      appendU16(out, 0xDC00 + (cp & 0x3FF));
    } else {
      appendU16(out, cp);
    }
  }
  out += '"';
}

void appendJsonStringUtf8(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      appendAsciiEscaped(out, c);
      continue;
    }
    const size_t start = i;
    if (decodeUtf8(s, i) == 0xFFFD) out += "\xEF\xBF\xBD";  // also a literal U+FFFD: same bytes
    else out.append(s.substr(start, i - start));
  }
  out += '"';
}

std::string jsonString(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

}  // namespace k3
