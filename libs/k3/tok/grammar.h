// A grammar over the symbols a K3 chat output is made of: the 256 byte values
// of ordinary text and the four XTML structure tokens (spec §7.6). Built by
// the JSON-schema compiler (grammar_schema.h) and the chat-output compiler
// (grammar_output.h) from a few node kinds; read by GrammarMatcher
// (grammar_matcher.h), which walks it one symbol at a time.
//
// Nodes reference each other by index, so a grammar may be recursive (any
// JSON value contains any JSON value). Every node the compilers build is
// satisfiable and every literal-trie node leads to a complete literal: a
// matcher state that accepted a symbol can always be completed, which is what
// lets a token mask allow exactly the tokens that keep the output completable.
// Thread-safety: immutable once built; shared by the generations using it.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace k3::tok {

// Symbols: bytes 0..255, then the structure tokens, then "end of input"
// (fed only to ask whether the input so far is complete).
enum GrammarSymbol : int {
  kSymOpen = 256,
  kSymClose = 257,
  kSymSep = 258,
  kSymEndOfMsg = 259,
  kSymEnd = 260,
};

struct GrammarNode {
  enum class Kind : uint8_t {
    Seq,        // kids in order (no kids: the empty string)
    Choice,     // one of kids
    Repeat,     // kids[0], between min and max times (max kUnbounded: no bound)
    Literal,    // one of a set of symbol strings (a trie rooted at `trie`)
    Ws,         // up to max JSON whitespace bytes (space, \t, \n, \r)
    FreeText,   // any bytes, no structure token (reasoning, plain content)
    String,     // a JSON string "…", min..max characters (code points)
    RawString,  // valid UTF-8 text, min..max characters (an XTML string argument)
    Number,     // a JSON number; min = 1: an integer (no fraction or exponent)
  };
  Kind kind = Kind::Seq;
  std::vector<uint32_t> kids;
  uint32_t min = 0, max = 0;
  uint32_t trie = 0;
};

inline constexpr uint32_t kUnbounded = UINT32_MAX;

class Grammar {
 public:
  struct TrieNode {
    std::vector<std::pair<uint16_t, uint32_t>> next;  // (symbol, node)
    bool terminal = false;
  };

  uint32_t add(GrammarNode n);
  uint32_t seq(std::vector<uint32_t> kids);
  uint32_t choice(std::vector<uint32_t> kids);
  uint32_t repeat(uint32_t kid, uint32_t min, uint32_t max);
  // A literal: one of `texts` (symbol strings; bytes as 0..255).
  uint32_t literal(const std::vector<std::vector<uint16_t>>& texts);
  uint32_t literal(std::string_view bytes);  // one byte string
  uint32_t leaf(GrammarNode::Kind kind, uint32_t min = 0, uint32_t max = 0);

  // Sets the start node and computes minLength() (call once the nodes are built).
  void setRoot(uint32_t root);
  // Symbols in the shortest sentence of node i (kUnbounded: none) and from
  // trie node t to the nearest end of a literal.
  uint32_t minLength(uint32_t i) const { return minLen_[i]; }
  uint32_t trieMinLength(uint32_t t) const { return trieMin_[t]; }
  uint32_t root() const { return root_; }
  const GrammarNode& node(uint32_t i) const { return nodes_[i]; }
  GrammarNode& node(uint32_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  const TrieNode& trie(uint32_t i) const { return tries_[i]; }

 private:
  std::vector<GrammarNode> nodes_;
  std::vector<TrieNode> tries_;
  uint32_t root_ = 0;
  std::vector<uint32_t> minLen_, trieMin_;
};

// The symbols of a byte string (for building literals).
std::vector<uint16_t> grammarSymbols(std::string_view bytes);

}  // namespace k3::tok
