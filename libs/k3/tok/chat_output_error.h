// What the output parser reports when the model's tokens break the XTML
// grammar (spec §7.6 "What the model writes"): where, what the grammar
// allowed there, and what came instead.
// Thread-safety: a value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace k3::tok {

struct ChatOutputError {
  size_t position = 0;   // 0-based index of the generated token the problem was found at
  std::string expected;  // e.g. "CLOSE(response) or content text"
  std::string found;     // e.g. "OPEN(call, tool=\"f\", index=\"1\")"
  std::string message() const;  // one line: "token 7: expected …, found …"
};

// Bytes shown in a one-line message: valid UTF-8, quoted and escaped as a
// JSON string, cut to about `maxBytes`.
std::string quoteSnippet(std::string_view bytes, size_t maxBytes = 48);

}  // namespace k3::tok
