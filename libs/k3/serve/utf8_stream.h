// Joins token bytes into whole UTF-8 characters: a token may end inside a
// multi-byte character, and a streamed delta must not carry half of one
// (the JSON writer would turn it into U+FFFD).
#pragma once

#include <string>
#include <string_view>

namespace k3::serve {

class Utf8Stream {
 public:
  // Appends bytes; returns the longest prefix of what is held that ends on a
  // character boundary (an invalid byte counts as a character of its own).
  std::string push(std::string_view bytes);
  // End of the stream: whatever is still held.
  std::string flush();

 private:
  std::string held_;
};

}  // namespace k3::serve
