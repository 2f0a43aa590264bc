#include "k3/tok/chat_output_marker.h"

#include <algorithm>

#include "k3/tok/chat_output_error.h"

namespace k3::tok {
namespace {

bool isNameByte(char c) { return c != ' ' && c != '=' && c != '"'; }

size_t nameEnd(std::string_view s, size_t i) {
  while (i < s.size() && isNameByte(s[i])) ++i;
  return i;
}

}  // namespace

const std::string* MarkerHeader::attr(std::string_view key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

std::string MarkerHeader::describe(bool open) const {
  std::string out = open ? "OPEN(" : "CLOSE(";
  const bool plain = !tag.empty() && tag.size() <= 32 && std::all_of(tag.begin(), tag.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  out += plain ? tag : quoteSnippet(tag);
  for (const auto& [k, v] : attrs) {
    out += ", ";
    out += k;
    out += '=';
    out += quoteSnippet(v);
  }
  out += ')';
  return out;
}

std::string escapeAttribute(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::optional<std::string> unescapeAttribute(std::string_view value, std::string& badEntity) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '&') {
      out += value[i];
      continue;
    }
    std::string_view rest = value.substr(i);
    if (rest.starts_with("&quot;")) {
      out += '"';
      i += 5;
    } else if (rest.starts_with("&amp;")) {
      out += '&';
      i += 4;
    } else {
      const size_t semi = rest.find(';');
      badEntity = std::string(rest.substr(0, semi < 10 ? semi + 1 : 8));
      return std::nullopt;
    }
  }
  return out;
}

std::optional<MarkerHeader> parseMarkerHeader(std::string_view s, std::string& expected, std::string& found) {
  MarkerHeader h;
  size_t i = nameEnd(s, 0);
  if (i == 0) {
    expected = "a tag name";
    found = quoteSnippet(s);
    return std::nullopt;
  }
  h.tag = std::string(s.substr(0, i));
  while (i < s.size()) {
    // ` key="value"`
    size_t keyStart = i + 1;
    size_t keyEnd = s[i] == ' ' ? nameEnd(s, keyStart) : keyStart;
    if (s[i] != ' ' || keyEnd == keyStart || s.substr(keyEnd, 2) != "=\"") {
      expected = "' key=\"value\"' attributes after the tag";
      found = quoteSnippet(s);
      return std::nullopt;
    }
    size_t valueStart = keyEnd + 2;
    size_t valueEnd = s.find('"', valueStart);
    if (valueEnd == std::string_view::npos) {
      expected = "the closing '\"' of attribute " + std::string(s.substr(keyStart, keyEnd - keyStart));
      found = quoteSnippet(s);
      return std::nullopt;
    }
    std::string bad;
    std::optional<std::string> value = unescapeAttribute(s.substr(valueStart, valueEnd - valueStart), bad);
    if (!value) {
      expected = "&quot; or &amp; (the only entities)";
      found = quoteSnippet(bad) + " in " + quoteSnippet(s);
      return std::nullopt;
    }
    h.attrs.emplace_back(std::string(s.substr(keyStart, keyEnd - keyStart)), std::move(*value));
    i = valueEnd + 1;
  }
  return h;
}

}  // namespace k3::tok
