#include "k3/tok/grammar_mask.h"

#include <algorithm>
#include <limits>

namespace k3::tok {

GrammarMask::GrammarMask(const GrammarVocab& vocab, std::shared_ptr<const Grammar> g)
    : vocab_(vocab),
      matcher_(std::move(g)),
      states_(vocab.all().maxDepth() + 1),
      marks_(vocab.all().maxDepth() + 2) {}

bool GrammarMask::walk(const TokenTrie& trie, std::vector<uint8_t>& allowed) {
  bool any = false;
  marks_[1] = matcher_.mark();
  const size_t n = trie.size();
  for (size_t i = 0; i < n;) {
    const uint32_t d = trie.depth(i);
    matcher_.rollback(marks_[d]);  // frames the walk pushed at depth d or below are done with
    GrammarState& out = states_[d];
    matcher_.step(states_[d - 1], trie.byte(i), out);
    if (out.n == 0) {
      i = trie.end(i);  // no token under this prefix can come next
      continue;
    }
    marks_[d + 1] = matcher_.mark();
    if (const int32_t id = trie.token(i); id >= 0 && (budget_ == SIZE_MAX || matcher_.minToComplete(out) < budget_)) {
      allowed[static_cast<size_t>(id)] = 1;
      any = true;
    }
    ++i;
  }
  return any;
}

bool GrammarMask::compute(std::vector<uint8_t>& allowed) {
  allowed.assign(vocab_.vocabSize(), 0);
  const size_t base = matcher_.mark();
  states_[0] = matcher_.state();
  bool any = false;
  bool raw = false;
  uint32_t room = 0;
  // The shortcuts hold while no plain token can make the completion too
  // long (they never lengthen it); near the budget every token is walked.
  const bool roomy = budget_ == SIZE_MAX || matcher_.minToComplete() < budget_;
  if (!roomy) {
    any = walk(vocab_.all(), allowed);
  } else if (matcher_.inFreeText()) {  // any byte string may come next
    std::fill(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(vocab_.numBase()), 1);
    any = vocab_.numBase() > 0;
  } else if (matcher_.inStringText(raw, room)) {
    const GrammarVocab::StringView& view = raw ? vocab_.rawString() : vocab_.jsonString();
    const int32_t limit = static_cast<int32_t>(std::min<uint32_t>(room, INT16_MAX));
    const int16_t* chars = view.plainChars.data();
    uint8_t* out = allowed.data();
    const size_t nb = vocab_.numBase();
    for (size_t i = 0; i < nb; ++i) out[i] = chars[i] >= 0 && chars[i] <= limit;
    any = std::find(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(nb), 1) != allowed.begin() + static_cast<std::ptrdiff_t>(nb);
    any = walk(view.others, allowed) || any;
  } else {
    any = walk(vocab_.all(), allowed);
  }
  for (const GrammarVocab::Special& s : vocab_.specials()) {
    GrammarState out;
    matcher_.step(states_[0], s.sym, out);
    if (out.n > 0 && (budget_ == SIZE_MAX || matcher_.minToComplete(out) < budget_)) {
      allowed[s.id] = 1;
      any = true;
    }
  }
  matcher_.rollback(base);
  return any;
}

bool GrammarMask::apply(float* logits, size_t n) {
  if (!compute(allowed_)) return false;
  const size_t known = std::min(n, allowed_.size());
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < known; ++i)
    if (!allowed_[i]) logits[i] = kNegInf;
  for (size_t i = known; i < n; ++i) logits[i] = kNegInf;
  return true;
}

bool GrammarMask::accept(uint32_t id) {
  for (const GrammarVocab::Special& s : vocab_.specials())
    if (s.id == id) return matcher_.feed(s.sym);
  if (id >= vocab_.numBase()) return false;  // other added tokens are never allowed
  return matcher_.feedBytes(vocab_.tokenizer().vocab().bytes(id));
}

}  // namespace k3::tok
