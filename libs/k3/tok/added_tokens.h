// AddedTokens: the 256 ids above the tiktoken ranks ([num_base, num_base+256)).
// Names come from tokenizer_config.json `added_tokens_decoder`; every id
// without an entry is `<|reserved_token_{id}|>` (spec 7.2, tokenization_kimi.py).
// All 256 are tiktoken "special" tokens (matched in text only when allowed);
// `hfSpecial` is the config's separate `special` flag (default true), which
// only decides whether Hugging Face decoders may skip the token.
// Thread-safety: immutable after construction; safe to share across threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

inline constexpr size_t kNumAddedTokens = 256;

struct AddedToken {
  uint32_t id = 0;
  std::string content;
  bool hfSpecial = true;
};

class AddedTokens {
 public:
  // All 256 ids reserved (the rule used when tokenizer_config.json is absent).
  static AddedTokens reserved(size_t numBase);
  // Reads `added_tokens_decoder` from a tokenizer_config.json. Entries below
  // num_base are an error; at or above num_base+256 only a bare
  // "<|reserved_token_ID|>" is allowed, and skipped (some older Kimi configs
  // list 258), anything else is an error. Duplicate contents are an error.
  static AddedTokens fromConfig(const std::string& configPath, size_t numBase);
  static AddedTokens fromConfigText(std::string_view json, size_t numBase, const std::string& origin);

  size_t numBase() const { return numBase_; }
  const std::vector<AddedToken>& all() const { return tokens_; }  // ordered by id
  const AddedToken* byId(uint32_t id) const {
    return (id >= numBase_ && id - numBase_ < tokens_.size()) ? &tokens_[id - numBase_] : nullptr;
  }
  std::optional<uint32_t> find(std::string_view content) const;

  // Longest added-token content starting at text[pos], if any.
  const AddedToken* matchAt(std::string_view text, size_t pos) const;
  // True if some added token starts with byte `b` (fast scan filter).
  bool mayStartWith(unsigned char b) const { return firstBytes_[b]; }

 private:
  void index(const std::string& origin);

  size_t numBase_ = 0;
  std::vector<AddedToken> tokens_;
  std::vector<uint32_t> byLength_;  // indices into tokens_, longest content first
  bool firstBytes_[256] = {};
};

}  // namespace k3::tok
