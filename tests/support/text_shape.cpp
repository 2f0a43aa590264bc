#include "support/text_shape.h"

#include <cctype>

namespace k3test {

namespace {

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

size_t digitsAt(std::string_view t, size_t i) {
  size_t n = 0;
  while (i + n < t.size() && isDigit(t[i + n])) ++n;
  return n;
}

// Backtracking over {*} (shortest first) and {n} (every digit count, longest
// first, as a greedy regex would); shapes here have a few placeholders.
bool match(std::string_view t, size_t ti, std::string_view s, size_t si, std::vector<std::string>& caps) {
  while (si < s.size()) {
    if (s.compare(si, 3, "{n}") == 0) {
      for (size_t n = digitsAt(t, ti); n >= 1; --n) {
        caps.emplace_back(t.substr(ti, n));
        if (match(t, ti + n, s, si + 3, caps)) return true;
        caps.pop_back();
      }
      return false;
    }
    if (s.compare(si, 3, "{s}") == 0) {
      const size_t whole = digitsAt(t, ti);
      if (whole == 0 || ti + whole + 3 > t.size() || t[ti + whole] != '.' || !isDigit(t[ti + whole + 1]) ||
          !isDigit(t[ti + whole + 2]))
        return false;
      ti += whole + 3;
      si += 3;
      continue;
    }
    if (s.compare(si, 3, "{*}") == 0) {
      for (size_t n = 0; ti + n <= t.size(); ++n) {
        caps.emplace_back(t.substr(ti, n));
        if (match(t, ti + n, s, si + 3, caps)) return true;
        caps.pop_back();
        if (ti + n < t.size() && t[ti + n] == '\n') break;
      }
      return false;
    }
    if (ti >= t.size() || t[ti] != s[si]) return false;
    ++ti;
    ++si;
  }
  return ti == t.size();
}

}  // namespace

std::optional<std::vector<std::string>> matchShape(std::string_view text, std::string_view shape) {
  std::vector<std::string> caps;
  if (!match(text, 0, shape, 0, caps)) return std::nullopt;
  return caps;
}

bool hasCountNote(std::string_view text) {
  for (size_t i = text.find('('); i != std::string_view::npos; i = text.find('(', i + 1)) {
    const size_t n = digitsAt(text, i + 1);
    if (n > 0 && text.substr(i + 1 + n, 2) == "x)") return true;
  }
  return false;
}

}  // namespace k3test
