#include "k3/tok/grammar_mask.h"

#include <algorithm>
#include <limits>

namespace k3::tok {

GrammarMask::GrammarMask(const GrammarVocab& vocab, std::shared_ptr<const Grammar> g)
    : vocab_(vocab),
      matcher_(std::move(g)),
      states_(vocab.all().maxDepth() + 1),
      marks_(vocab.all().maxDepth() + 2) {}

bool GrammarMask::walk(const TokenTrie& trie, std::vector<uint8_t>& allowed, size_t budget) {
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
    if (const int32_t id = trie.token(i); id >= 0 && (budget == SIZE_MAX || matcher_.minToComplete(out) < budget)) {
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
  uint32_t room = 0, need = 0;
  // With a budget, a token may leave at most budget - 1 symbols to complete.
  // Plain text in free text leaves that count as it is, and in a string
  // shortens it only by the characters still missing to minLength: both
  // shortcuts stay exact near the budget.
  const uint64_t rest = matcher_.minToComplete();
  // A budget the grammar cannot meet any more (max_tokens below the shortest
  // answer) is dropped: the output then stays a valid prefix, cut by length.
  const size_t budget = rest <= budget_ ? budget_ : SIZE_MAX;
  const int64_t over = budget == SIZE_MAX ? INT64_MIN : static_cast<int64_t>(rest) - static_cast<int64_t>(budget) + 1;
  if (matcher_.inFreeText()) {  // any byte string may come next
    if (over <= 0) {
      std::fill(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(vocab_.numBase()), 1);
      any = vocab_.numBase() > 0;
    }
  } else if (matcher_.inStringText(raw, room, need)) {
    const GrammarVocab::StringView& view = raw ? vocab_.rawString() : vocab_.jsonString();
    const int32_t hi = static_cast<int32_t>(std::min<uint32_t>(room, INT16_MAX));
    const int32_t lo = over <= 0 ? 0 : over > static_cast<int64_t>(need) ? INT32_MAX : static_cast<int32_t>(over);
    const int16_t* chars = view.plainChars.data();
    uint8_t* out = allowed.data();
    const size_t nb = vocab_.numBase();
    for (size_t i = 0; i < nb; ++i) out[i] = chars[i] >= lo && chars[i] <= hi;
    any = std::find(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(nb), 1) != allowed.begin() + static_cast<std::ptrdiff_t>(nb);
    any = walk(view.others, allowed, budget) || any;
  } else {
    any = walk(vocab_.all(), allowed, budget);
  }
  for (const GrammarVocab::Special& s : vocab_.specials()) {
    GrammarState out;
    matcher_.step(states_[0], s.sym, out);
    if (out.n > 0 && (budget == SIZE_MAX || matcher_.minToComplete(out) < budget)) {
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
