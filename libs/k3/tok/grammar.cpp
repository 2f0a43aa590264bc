#include "k3/tok/grammar.h"

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

std::vector<uint16_t> grammarSymbols(std::string_view bytes) {
  std::vector<uint16_t> out;
  out.reserve(bytes.size());
  for (char c : bytes) out.push_back(static_cast<uint8_t>(c));
  return out;
}

}  // namespace k3::tok
