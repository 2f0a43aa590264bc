#include "k3/tok/token_trie.h"

#include <algorithm>
#include <string_view>


namespace k3::tok {

TokenTrie::TokenTrie(const Vocab& v, std::span<const uint32_t> idList) {
  std::vector<uint32_t> ids(idList.begin(), idList.end());
  std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return v.bytes(a) < v.bytes(b); });
  // Sorted strings -> preorder trie: keep the path of open nodes; each token
  // closes the nodes deeper than its common prefix with the previous one.
  std::vector<uint32_t> open;  // node index per depth-1
  std::string_view prev;
  for (uint32_t id : ids) {
    const std::string_view s = v.bytes(id);
    size_t common = 0;
    while (common < s.size() && common < prev.size() && s[common] == prev[common]) ++common;
    while (open.size() > common) {
      end_[open.back()] = static_cast<uint32_t>(byte_.size());
      open.pop_back();
    }
    for (size_t k = common; k < s.size(); ++k) {
      open.push_back(static_cast<uint32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(s[k]));
      token_.push_back(-1);
      end_.push_back(0);
      depth_.push_back(static_cast<uint32_t>(k + 1));
    }
    if (!open.empty()) token_[open.back()] = static_cast<int32_t>(id);  // vocab strings are non-empty and unique
    maxDepth_ = std::max<uint32_t>(maxDepth_, static_cast<uint32_t>(s.size()));
    prev = s;
  }
  for (uint32_t n : open) end_[n] = static_cast<uint32_t>(byte_.size());
}

}  // namespace k3::tok
