// Helpers for the tokenizer unit tests: tiny hand-written vocabularies.
#pragma once

#include <string>
#include <vector>

#include "k3/tok/vocab.h"

namespace k3test {

// tiktoken.model text: ranks 0..255 are the single bytes 0..255, then `extra`
// from rank 256 on.
inline std::string tinyModelText(const std::vector<std::string>& extra) {
  std::string text;
  for (int b = 0; b < 256; ++b) {
    std::string one(1, static_cast<char>(b));
    text += k3::tok::encodeBase64(one) + " " + std::to_string(b) + "\n";
  }
  for (size_t i = 0; i < extra.size(); ++i) text += k3::tok::encodeBase64(extra[i]) + " " + std::to_string(256 + i) + "\n";
  return text;
}

inline k3::tok::Vocab tinyVocab(const std::vector<std::string>& extra) {
  return k3::tok::Vocab::parse(tinyModelText(extra), "tiny");
}

}  // namespace k3test
