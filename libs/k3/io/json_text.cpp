#include "k3/io/json_text.h"

#include <cstdint>
#include <cstdio>
#include <sstream>

namespace k3 {
namespace {

void appendU16(std::string& out, uint32_t cp) {
  char buf[8];
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

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Both variants escape exactly what Python's encoder does: '"', '\\', the
// five short escapes and other C0 controls as \u00xx; they differ only in
// what happens to non-ASCII code points.
void appendEscaped(std::string& out, std::string_view s, bool ensureAscii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          // DEL: escaped by ensure_ascii=True only (Python's ESCAPE_ASCII is [^ -~]).
          if (c < 0x20 || (c == 0x7F && ensureAscii)) appendU16(out, c);
          else out += static_cast<char>(c);
      }
      continue;
    }
    uint32_t cp = decodeUtf8(s, i);
    if (!ensureAscii) {
      appendUtf8(out, cp);
    } else if (cp >= 0x10000) {
      cp -= 0x10000;
      appendU16(out, 0xD800 + (cp >> 10));
      appendU16(out, 0xDC00 + (cp & 0x3FF));
    } else {
      appendU16(out, cp);
    }
  }
  out += '"';
}

}  // namespace

void appendJsonString(std::string& out, std::string_view s) { appendEscaped(out, s, true); }
void appendJsonStringUtf8(std::string& out, std::string_view s) { appendEscaped(out, s, false); }

std::string jsonString(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

std::string& JsonObject::next(std::string_view key) {
  if (!empty_) text_ += spaced_ ? ", " : ",";
  empty_ = false;
  appendJsonString(text_, key);
  text_ += spaced_ ? ": " : ":";
  return text_;
}

JsonObject& JsonObject::add(std::string_view key, std::string_view text) {
  appendJsonString(next(key), text);
  return *this;
}

JsonObject& JsonObject::add(std::string_view key, bool value) { return raw(key, value ? "true" : "false"); }

JsonObject& JsonObject::add(std::string_view key, double value) {
  std::ostringstream os;
  os << value;
  return raw(key, os.str());
}

JsonObject& JsonObject::add(std::string_view key, std::span<const int32_t> ids) {
  std::string& out = next(key);
  out += '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += spaced_ ? ", " : ",";
    out += std::to_string(ids[i]);
  }
  out += ']';
  return *this;
}

JsonObject& JsonObject::add(std::string_view key, const JsonObject& nested) { return raw(key, nested.str()); }

JsonObject& JsonObject::add(std::string_view key, std::span<const JsonObject> items) {
  std::string& out = next(key);
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += spaced_ ? ", " : ",";
    out += items[i].str();
  }
  out += ']';
  return *this;
}

JsonObject& JsonObject::fixed(std::string_view key, double value, int decimals) {
  std::string s(static_cast<size_t>(std::snprintf(nullptr, 0, "%.*f", decimals, value)), '\0');
  std::snprintf(s.data(), s.size() + 1, "%.*f", decimals, value);
  return raw(key, s);
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
  next(key) += json;
  return *this;
}

}  // namespace k3
