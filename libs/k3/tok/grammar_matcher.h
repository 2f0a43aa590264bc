// Incremental recognizer of a Grammar (grammar.h): feed symbols one at a
// time, ask whether one can come next and whether the input is complete.
//
// Its state is a small set of threads (the grammar's Choice and Repeat nodes
// are followed nondeterministically; threads die on a symbol they cannot
// take). A thread is the innermost frame by value plus a link to its parents,
// which live in an append-only arena and are never changed: copying a state
// copies a few 16-byte frames, and a token-mask walk (grammar_mask.h) can try
// a symbol from a saved state and drop what it pushed with rollback().
// Thread-safety: one per generation; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "k3/tok/grammar.h"

namespace k3::tok {

struct GrammarFrame {
  uint32_t node = 0;
  uint32_t a = 0, b = 0;  // node-kind state: next kid, count, trie node, characters, …
  uint32_t parent = UINT32_MAX;  // arena index of the enclosing frame (UINT32_MAX: the root)
  bool operator==(const GrammarFrame&) const = default;
};

struct GrammarState {
  static constexpr size_t kMaxThreads = 32;  // more alternatives alive at once are dropped (the output stays valid)
  uint32_t n = 0;
  bool accepted = false;  // set when fed kSymEnd and a thread completed the root
  GrammarFrame t[kMaxThreads];
  void add(const GrammarFrame& f);
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

  // Feeds one symbol; false (and nothing changes) when it cannot come next.
  bool feed(int sym);
  bool feedBytes(std::string_view bytes);  // all or nothing
  // Whether `bytes` (or the structure token `sym`) could be fed now; nothing changes.
  bool accepts(std::string_view bytes);
  bool acceptsSymbol(int sym);
  // The input so far is a complete sentence of the grammar.
  bool accepting();
  // No symbol at all can follow (the sentence is complete and ends there).
  bool dead() const { return cur_.n == 0; }

  // For mask walks: `out` = `in` after `sym` (out.n == 0: refused). Frames
  // pushed meanwhile stay in the arena until rollback(mark()).
  void step(const GrammarState& in, int sym, GrammarState& out);
  const GrammarState& state() const { return cur_; }
  // The current state is one FreeText thread: every byte string may come
  // next and leaves minToComplete() as it is.
  bool inFreeText() const;
  // The current state is one thread inside a string's text, between
  // characters: `raw` for an XTML raw string, `room` = characters it may
  // still take. Then any whole-character text without quote, backslash or
  // control byte (raw: any whole-character text) of at most `room`
  // characters may come next; `need`: characters still missing to minLength
  // (such text shortens minToComplete() by up to that many).
  bool inStringText(bool& raw, uint32_t& room, uint32_t& need) const;
  // Symbols in the shortest completion of `s` (kUnbounded: none). Every
  // byte is a token of a byte-level vocabulary and every structure symbol
  // one token, so this bounds the tokens a completion needs.
  uint32_t minToComplete(const GrammarState& s) const;
  uint32_t minToComplete() const { return minToComplete(cur_); }
  size_t mark() const { return arena_.size(); }
  void rollback(size_t mark) { arena_.resize(mark); }
  const Grammar& grammar() const { return *g_; }

 private:
  void feedThread(GrammarFrame t, int sym, GrammarState& out, int depth);
  uint32_t frameRest(const GrammarFrame& f) const;
  uint32_t push(const GrammarFrame& f);

  std::shared_ptr<const Grammar> g_;
  std::vector<GrammarFrame> arena_;
  GrammarState cur_;
};

}  // namespace k3::tok
