// XTML chat encoder (spec §7.6): ChatRequest -> segments -> token ids.
// Only <|open|>, <|close|>, <|sep|> and <|end_of_msg|> are structure; every
// text piece (tag, attribute, body) is its own segment, encoded with special
// tokens disallowed, so BPE never merges across a boundary and a literal
// "<|open|>" in any text stays text. No BOS. See docs/CHAT.md.
// Thread-safety: pure functions over a const tokenizer; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k3/tok/chat_message.h"
#include "k3/tok/tokenizer.h"

namespace k3::tok {

// One piece of the rendered prompt: a structure token or a text segment.
struct ChatSegment {
  bool special = false;  // true: `id` is one of the four XTML specials
  uint32_t id = 0;
  std::string text;  // special: the token's content; else the segment's text
};

struct RenderedChat {
  std::vector<ChatSegment> segments;  // in order; empty text segments are omitted
  std::vector<uint32_t> ids;          // the segments encoded and concatenated
  bool overLimit = false;             // renderChat with a token limit: the prompt is longer (ids, segments cut)
};

// The whole prompt, every element of §7.6 in order. Throws k3::Error(Usage)
// naming messages[i].field for a request the format cannot express, and
// (Missing) when the tokenizer lacks one of the four XTML specials.
RenderedChat renderChat(const Tokenizer& tok, const ChatRequest& request);
// The same, but encoding stops once the prompt passes `tokenLimit` ids
// (overLimit then): the work is bounded by the limit, not the request.
RenderedChat renderChat(const Tokenizer& tok, const ChatRequest& request, size_t tokenLimit);

// What a model writes for `assistant` after the generation prompt: with
// thinking, starting after OPEN(think) (reasoning CLOSE(think) OPEN(response)
// …), otherwise after OPEN(response); through CLOSE(message) <|end_of_msg|>.
RenderedChat renderAssistantBody(const Tokenizer& tok, const ChatMessage& assistant, bool thinking);

// Segment boundaries made visible for `k3-tokgen chat --text`: specials as
// their content, each text segment between U+2039/U+203A marks (‹text›).
std::string describeSegments(const std::vector<ChatSegment>& segments);

}  // namespace k3::tok
