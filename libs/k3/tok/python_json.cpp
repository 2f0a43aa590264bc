#include "k3/tok/python_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "k3/io/json_text.h"

namespace k3::tok {

std::string pyFloatRepr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  // Shortest round-trip digits in scientific form: "-d.ddde[+-]x".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp10 = std::atoi(sci.c_str() + e + 1);
  std::string sign;
  if (!mant.empty() && mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out = sign;
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp10 < 0 ? "e-" : "e+";
    const int a = std::abs(exp10);
    if (a < 10) out += '0';
    out += std::to_string(a);
    return out;
  }
  if (exp10 < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
  } else {
    const size_t intLen = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= intLen) {
      out += digits + std::string(intLen - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, intLen) + "." + digits.substr(intLen);
    }
  }
  return out;
}

void appendPyDumps(std::string& out, const JsonValue& v, PyDumpsStyle style) {
  const char* itemSep = style.compact ? "," : ", ";
  const char* keySep = style.compact ? ":" : ": ";
  switch (v.kind) {
    case JsonValue::Kind::Null: out += "null"; return;
    case JsonValue::Kind::Bool: out += v.boolean ? "true" : "false"; return;
    case JsonValue::Kind::Int: out += v.text; return;
    case JsonValue::Kind::Float: out += style.literalFloats && !v.text.empty() ? v.text : pyFloatRepr(v.number); return;
    case JsonValue::Kind::String: appendJsonStringUtf8(out, v.text); return;
    case JsonValue::Kind::Array:
      out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += itemSep;
        appendPyDumps(out, v.items[i], style);
      }
      out += ']';
      return;
    case JsonValue::Kind::Object: {
      std::vector<const std::pair<std::string, JsonValue>*> order;
      for (const auto& m : v.members) order.push_back(&m);
      // Python sorts str keys by code point; UTF-8 byte order is the same.
      if (style.sortKeys)
        std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      for (size_t i = 0; i < order.size(); ++i) {
        if (i) out += itemSep;
        appendJsonStringUtf8(out, order[i]->first);
        out += keySep;
        appendPyDumps(out, order[i]->second, style);
      }
      out += '}';
      return;
    }
  }
}

std::string pyDumps(const JsonValue& v, PyDumpsStyle style) {
  std::string out;
  appendPyDumps(out, v, style);
  return out;
}

}  // namespace k3::tok
