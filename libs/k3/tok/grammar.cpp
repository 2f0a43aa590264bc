#include "k3/tok/grammar.h"

#include <algorithm>

namespace k3::tok {

uint32_t Grammar::add(GrammarNode n) {
  nodes_.push_back(std::move(n));
  return static_cast<uint32_t>(nodes_.size() - 1);
}

uint32_t Grammar::seq(std::vector<uint32_t> kids) {
  if (kids.size() == 1) return kids[0];
  GrammarNode n;
  n.kind = GrammarNode::Kind::Seq;
  n.kids = std::move(kids);
  return add(std::move(n));
}

uint32_t Grammar::choice(std::vector<uint32_t> kids) {
  if (kids.size() == 1) return kids[0];
  GrammarNode n;
  n.kind = GrammarNode::Kind::Choice;
  n.kids = std::move(kids);
  return add(std::move(n));
}

uint32_t Grammar::repeat(uint32_t kid, uint32_t min, uint32_t max) {
  GrammarNode n;
  n.kind = GrammarNode::Kind::Repeat;
  n.kids = {kid};
  n.min = min;
  n.max = max;
  return add(std::move(n));
}

uint32_t Grammar::literal(const std::vector<std::vector<uint16_t>>& texts) {
  const uint32_t root = static_cast<uint32_t>(tries_.size());
  tries_.emplace_back();
  for (const auto& text : texts) {
    uint32_t at = root;
    for (uint16_t sym : text) {
      uint32_t found = UINT32_MAX;
      for (const auto& [s, n] : tries_[at].next)
        if (s == sym) found = n;
      if (found == UINT32_MAX) {
        found = static_cast<uint32_t>(tries_.size());
        tries_.emplace_back();
        tries_[at].next.emplace_back(sym, found);
      }
      at = found;
    }
    tries_[at].terminal = true;
  }
  GrammarNode n;
  n.kind = GrammarNode::Kind::Literal;
  n.trie = root;
  return add(std::move(n));
}

uint32_t Grammar::literal(std::string_view bytes) { return literal(std::vector<std::vector<uint16_t>>{grammarSymbols(bytes)}); }

uint32_t Grammar::leaf(GrammarNode::Kind kind, uint32_t min, uint32_t max) {
  GrammarNode n;
  n.kind = kind;
  n.min = min;
  n.max = max;
  return add(std::move(n));
}

void Grammar::setRoot(uint32_t root) {
  root_ = root;
  // Children of a trie node are created after it: one backward pass.
  trieMin_.assign(tries_.size(), kUnbounded);
  for (size_t t = tries_.size(); t-- > 0;) {
    uint32_t m = tries_[t].terminal ? 0 : kUnbounded;
    for (const auto& [sym, next] : tries_[t].next)
      if (trieMin_[next] != kUnbounded) m = std::min(m, trieMin_[next] + 1);
    trieMin_[t] = m;
  }
  // Node lengths: a fixpoint from "no sentence" down (the grammar may be recursive).
  auto add = [](uint64_t a, uint64_t b) { return static_cast<uint32_t>(std::min<uint64_t>(a + b, kUnbounded)); };
  minLen_.assign(nodes_.size(), kUnbounded);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const GrammarNode& n = nodes_[i];
      uint32_t m = 0;
      switch (n.kind) {
        case GrammarNode::Kind::Seq:
          for (uint32_t k : n.kids) m = add(m, minLen_[k]);
          break;
        case GrammarNode::Kind::Choice:
          m = kUnbounded;
          for (uint32_t k : n.kids) m = std::min(m, minLen_[k]);
          break;
        case GrammarNode::Kind::Repeat:
          m = n.min == 0 ? 0 : static_cast<uint32_t>(std::min<uint64_t>(uint64_t{n.min} * minLen_[n.kids[0]], kUnbounded));
          break;
        case GrammarNode::Kind::Literal: m = trieMin_[n.trie]; break;
        case GrammarNode::Kind::Ws:
        case GrammarNode::Kind::FreeText: m = 0; break;
        case GrammarNode::Kind::String: m = add(n.min, 2); break;
        case GrammarNode::Kind::RawString: m = n.min; break;
        case GrammarNode::Kind::Number: m = 1; break;
      }
      if (m < minLen_[i]) {
        minLen_[i] = m;
        changed = true;
      }
    }
  }
}

std::vector<uint16_t> grammarSymbols(std::string_view bytes) {
  std::vector<uint16_t> out;
  out.reserve(bytes.size());
  for (char c : bytes) out.push_back(static_cast<uint8_t>(c));
  return out;
}

}  // namespace k3::tok
