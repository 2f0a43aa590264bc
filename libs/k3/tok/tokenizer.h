// Tokenizer: Kimi tiktoken-exact encoding and decoding for any vocabulary size
// (the real 163,584-rank file or small synthetic ones). Ids [0, numBase) are
// tiktoken ranks; [numBase, numBase+256) are the added tokens (added_tokens.h).
// Immutable after construction; safe to use from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "k3/tok/added_tokens.h"
#include "k3/tok/pretokenizer.h"
#include "k3/tok/vocab.h"

namespace k3::tok {

class Tokenizer {
 public:
  // dir/tiktoken.model plus dir/tokenizer_config.json when present.
  static Tokenizer fromDirectory(const std::string& dir);
  // An empty configPathOrEmpty means "no config": all added ids reserved.
  static Tokenizer fromFiles(const std::string& tiktokenPath, const std::string& configPathOrEmpty);
  Tokenizer(Vocab vocab, AddedTokens added);

  // Encodes like tiktoken. allowSpecial=false (encode_ordinary): added-token
  // text such as "<|open|>" is plain BPE. allowSpecial=true (allowed "all"):
  // the earliest, then longest, added-token content is emitted as its id.
  std::vector<uint32_t> encode(std::string_view text, bool allowSpecial = false) const;
  void encodeAppend(std::string_view text, bool allowSpecial, std::vector<uint32_t>& out) const;
  // encodeAppend that stops once `out` would hold more than `limit` ids:
  // false then (the whole encoding is longer; `out` holds some prefix of it).
  // Work and memory are bounded by the limit, not the text (a server refuses
  // a prompt longer than its context without encoding all of it): pieces are
  // encoded one at a time, and a piece too long to fit in the ids left (more
  // bytes than they can cover at the longest token) is not encoded at all.
  bool encodeAppendUpTo(std::string_view text, bool allowSpecial, std::vector<uint32_t>& out, size_t limit) const;
  // The bytes of the ids concatenated (may be invalid UTF-8 if the ids split
  // a character, exactly as tiktoken's decode_bytes). Throws on unknown ids.
  std::string decode(std::span<const uint32_t> ids) const;
  std::string tokenBytes(uint32_t id) const;  // added tokens: their content
  std::optional<uint32_t> specialId(std::string_view content) const { return added_.find(content); }
  // True for every added token (all 256 are tiktoken specials, whatever the
  // config's HF "special" flag says; see hfSpecial()).
  bool isSpecial(uint32_t id) const { return id >= numBase() && id < vocabSize(); }
  bool hfSpecial(uint32_t id) const;  // config flag, false for ranks
  size_t numBase() const { return vocab_.size(); }
  size_t vocabSize() const { return vocab_.size() + kNumAddedTokens; }

  const Vocab& vocab() const { return vocab_; }
  const AddedTokens& addedTokens() const { return added_; }
  const PreTokenizer& preTokenizer() const { return pre_; }

 private:
  bool encodeOrdinary(std::string_view text, std::vector<uint32_t>& out, size_t limit) const;

  Vocab vocab_;
  AddedTokens added_;
  PreTokenizer pre_;
  size_t longestToken_ = 1;  // bytes of the longest rank
};

}  // namespace k3::tok
