// Rank-BPE of one pre-token piece, identical to tiktoken (spec 7.4): if the
// whole piece is a token, emit it; otherwise start from single bytes and
// repeatedly merge the adjacent pair whose concatenation has the lowest rank
// (leftmost on ties) until no adjacent concatenation is a token.
// Thread-safety: pure over a const Vocab (the caller's output vector); safe
// from any thread.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "k3/tok/vocab.h"

namespace k3::tok {

// Appends the ids of `piece` (non-empty) to `out`.
void bytePairEncode(const Vocab& vocab, std::string_view piece, std::vector<uint32_t>& out);

}  // namespace k3::tok
