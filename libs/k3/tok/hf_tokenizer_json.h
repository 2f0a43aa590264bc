// Hugging Face tokenizer.json for a Kimi tiktoken vocabulary (spec 7.2, with
// merges). HF's BPE merges the adjacent pair with the lowest merge index;
// tiktoken merges the pair whose concatenation has the lowest rank. So the
// merges are every split (a, b) of every token t with a, b reachable tokens
// (single bytes, or tokens that have such a split), ordered by rank(t) and
// then split position: merge order then equals tiktoken's rank order.
// `ignore_merges` makes a piece that is one whole token map to it directly
// (tiktoken's first step). The one case HF cannot follow: two different splits
// of the same token competing in one piece, where tiktoken takes the leftmost
// pair and HF the lower split index.
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "k3/tok/tokenizer.h"

namespace k3::tok {

struct Merge {
  uint32_t left = 0, right = 0, result = 0;  // ranks
};

// Merges in HF priority order (see above).
std::vector<Merge> rankOrderedMerges(const Vocab& vocab);

struct HfJsonStats {
  size_t vocab = 0, merges = 0, addedTokens = 0, unreachable = 0;
  // Added tokens whose content is also a rank's byte-level key: HF resolves
  // such an added token to the rank's id, tiktoken to the added id.
  size_t addedShadowed = 0;
};

// The complete tokenizer.json text; same bytes for the same inputs.
std::string buildHfTokenizerJson(const Tokenizer& tok, HfJsonStats* stats = nullptr);

// JSON string literal (quotes included); non-ASCII kept as UTF-8.
void appendJsonString(std::string& out, std::string_view s);

}  // namespace k3::tok
