// Token byte strings (some or all ranks of a vocabulary) as one trie, laid
// out in preorder (node i's subtree is [i, end(i))), so a walk that refuses a
// byte skips every token starting with the bytes so far at once, and tokens
// sharing a prefix are walked once.
// Thread-safety: immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "k3/tok/vocab.h"

namespace k3::tok {

class TokenTrie {
 public:
  TokenTrie(const Vocab& vocab, std::span<const uint32_t> ids);

  size_t size() const { return byte_.size(); }  // nodes (the root is implicit)
  uint8_t byte(size_t i) const { return byte_[i]; }
  int32_t token(size_t i) const { return token_[i]; }  // the id ending at node i, or -1
  uint32_t end(size_t i) const { return end_[i]; }
  uint32_t depth(size_t i) const { return depth_[i]; }  // 1 for the root's children
  uint32_t maxDepth() const { return maxDepth_; }

 private:
  std::vector<uint8_t> byte_;
  std::vector<int32_t> token_;
  std::vector<uint32_t> end_, depth_;
  uint32_t maxDepth_ = 0;
};

}  // namespace k3::tok
