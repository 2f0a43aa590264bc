// OpenAI `stop` strings over streamed text: a stop may straddle any number of
// tokens, so text that could be the start of a stop is held back until it
// either completes one (generation ends, the stop and everything after it
// are dropped) or cannot (it is released). Nothing of a stop is ever emitted.
// Thread-safety: not thread-safe; one per generation.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace k3::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends text; returns what is safe to emit now. Once a stop matched,
  // stopped() is true and later pushes return nothing.
  std::string push(std::string_view text);
  // End of generation without a match: the held tail.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace k3::serve
