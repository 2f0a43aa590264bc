// The ids the server generated for its replies, so a reply that comes back
// in a later request's history renders as exactly those ids. Re-encoding the
// reply's text may tokenize differently (a reply sampled as `"` + `p` comes
// back as one `"p`), and then the stored state of the previous turn, whose
// tokens are the generated ones, would not be a prefix of the new prompt.
//
// A reply is keyed by what the client sees and sends back: the thinking mode,
// its reasoning, content and tool calls (name and arguments). The remembered
// body is the generated ids that match the rendered body run for run (text
// between structure tokens compared as the client saw it: bytes that are not
// UTF-8 became U+FFFD; the model reads its own bytes again), completed by the
// rendered ids where generation stopped (the unfed <|end_of_msg|>, or the
// closing structure of a reply cut by max_tokens). A reply whose text does
// not match its ids (cut by a stop string, arguments normalised by the
// parser) is not remembered: it renders as text, as before. Bounded by
// bytes, least recently used out.
// Thread-safety: every member is safe from any thread (one mutex): the
// engine remembers, the HTTP threads recall.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "k3/tok/chat_message.h"
#include "k3/tok/tokenizer.h"

namespace k3::serve {

// The body to remember for `reply` generated as `generated` (the ids picked
// after the prompt: those fed, then the last one, which was not), or nullopt
// when they do not spell the same message.
std::optional<std::vector<uint32_t>> generatedBody(const tok::Tokenizer& tok, const tok::ChatMessage& reply,
                                                   bool thinking, std::span<const int32_t> generated);

class ReplyIdMemory {
 public:
  explicit ReplyIdMemory(uint64_t maxBytes) : max_(maxBytes) {}
  void remember(const tok::Tokenizer& tok, const tok::ChatMessage& reply, bool thinking,
                std::span<const int32_t> generated);
  // Sets bodyIds of every assistant message of `chat` it remembers.
  void recall(tok::ChatRequest& chat) const;
  size_t entries() const;
  uint64_t bytes() const;

 private:
  struct Entry {
    std::string key;
    std::vector<uint32_t> ids;
    uint64_t bytes() const { return key.size() + ids.size() * 4 + 64; }
  };
  uint64_t max_;
  mutable std::mutex m_;
  mutable std::list<Entry> lru_;  // most recent first (recall refreshes)
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t bytes_ = 0;
};

}  // namespace k3::serve
