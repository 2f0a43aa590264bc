#include "k3/tok/bpe.h"

#include <queue>
#include <tuple>

namespace k3::tok {
namespace {

// Short pieces: rescan all pairs after each merge (cache-friendly, no heap).
// bounds[i] is the start of symbol i; bounds.back() == piece.size().
void mergeLinear(const Vocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  constexpr size_t kMax = 128;
  uint32_t bounds[kMax + 1];
  uint32_t pairRank[kMax];  // rank of symbols i and i+1 concatenated
  size_t n = piece.size();
  for (size_t i = 0; i <= n; ++i) bounds[i] = static_cast<uint32_t>(i);
  size_t symbols = n;
  auto rankOf = [&](size_t i) {  // pair (i, i+1), valid for i + 1 < symbols
    return vocab.rank(piece.substr(bounds[i], bounds[i + 2] - bounds[i]));
  };
  for (size_t i = 0; i + 1 < symbols; ++i) pairRank[i] = rankOf(i);
  while (symbols > 1) {
    uint32_t best = kNoRank;
    size_t at = 0;
    for (size_t i = 0; i + 1 < symbols; ++i)
      if (pairRank[i] < best) best = pairRank[i], at = i;
    if (best == kNoRank) break;
    // Merge symbols at and at+1: drop boundary at+1.
    for (size_t i = at + 1; i < symbols; ++i) bounds[i] = bounds[i + 1];
    for (size_t i = at + 1; i + 1 < symbols; ++i) pairRank[i] = pairRank[i + 1];
    --symbols;
    if (at + 1 < symbols) pairRank[at] = rankOf(at);
    if (at > 0) pairRank[at - 1] = rankOf(at - 1);
  }
  for (size_t i = 0; i < symbols; ++i)
    out.push_back(vocab.rank(piece.substr(bounds[i], bounds[i + 1] - bounds[i])));
}

// Long pieces: a min-heap of (rank, left start, right end) over a linked list
// of symbols. Stale entries are skipped; an entry whose span still matches a
// live pair has the same bytes, hence the same rank, so it is equally valid.
void mergeHeap(const Vocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  size_t n = piece.size();
  std::vector<uint32_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = static_cast<uint32_t>(i + 1);  // n = none
    prev[i] = static_cast<uint32_t>(i == 0 ? n : i - 1);
  }
  using Entry = std::tuple<uint32_t, uint32_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto endOf = [&](uint32_t s) { return next[s] == n ? static_cast<uint32_t>(n) : next[s]; };
  auto push = [&](uint32_t left) {
    uint32_t right = next[left];
    if (right >= n) return;
    uint32_t end = endOf(right);
    uint32_t r = vocab.rank(piece.substr(left, end - left));
    if (r != kNoRank) heap.emplace(r, left, end);
  };
  for (uint32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    auto [r, left, end] = heap.top();
    heap.pop();
    if (!alive[left] || next[left] >= n || endOf(next[left]) != end) continue;
    uint32_t right = next[left];
    alive[right] = false;
    next[left] = next[right];
    if (next[right] < n) prev[next[right]] = left;
    push(left);
    if (prev[left] < n) push(prev[left]);
  }
  for (uint32_t s = 0; s < n; s = next[s]) out.push_back(vocab.rank(piece.substr(s, endOf(s) - s)));
}

}  // namespace

void bytePairEncode(const Vocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  if (piece.size() == 1) {
    out.push_back(vocab.byteRank(static_cast<uint8_t>(piece[0])));
    return;
  }
  uint32_t whole = vocab.rank(piece);
  if (whole != kNoRank) {
    out.push_back(whole);
    return;
  }
  if (piece.size() <= 128)
    mergeLinear(vocab, piece, out);
  else
    mergeHeap(vocab, piece, out);
}

}  // namespace k3::tok
