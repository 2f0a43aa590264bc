// XTML chat prompt builder (spec 7.6, encoding_k3.py). Only <|open|>,
// <|close|>, <|sep|> and <|end_of_msg|> are emitted as special ids; every
// ordinary-text piece (tag names, attributes, message text) is encoded as its
// own segment with special tokens disallowed, so BPE never merges across a
// segment boundary and user text like "<|open|>" stays plain text. No BOS.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "k3/tok/tokenizer.h"

namespace k3::tok {

struct ChatMessage {
  std::string role;  // system | developer (= system) | user | assistant
  std::string content;
  std::string reasoning;  // assistant only; kept in history when thinking
};

struct ChatOptions {
  bool thinking = true;             // think channel in history and prompt
  bool addGenerationPrompt = true;  // end with the assistant turn opener
};

// Throws k3::Error(Usage) for an unknown role and (Missing) when the
// tokenizer lacks one of the four XTML specials.
std::vector<uint32_t> buildChatPrompt(const Tokenizer& tok, std::span<const ChatMessage> messages,
                                      const ChatOptions& opts);

}  // namespace k3::tok
