// Vocab: the rank table of a tiktoken.model file (`base64(bytes) SP rank` per
// line). Ranks are token ids 0..n-1; the table answers bytes -> rank (an
// open-addressing hash over one byte blob) and rank -> bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

inline constexpr uint32_t kNoRank = UINT32_MAX;

class Vocab {
 public:
  Vocab() = default;

  // Parses and validates: every line is valid base64 + a decimal rank, byte
  // strings are unique, ranks are exactly 0..n-1, and all 256 single bytes
  // are present (byte-level BPE needs them). `origin` names the source in errors.
  static Vocab parse(std::string_view text, const std::string& origin);
  static Vocab load(const std::string& path);

  size_t size() const { return offsets_.size() - 1; }
  std::string_view bytes(uint32_t rank) const {
    return {blob_.data() + offsets_[rank], offsets_[rank + 1] - offsets_[rank]};
  }
  // kNoRank when `piece` is not a token.
  uint32_t rank(std::string_view piece) const {
    uint64_t mask = slots_.size() - 1;
    for (uint64_t i = hashBytes(piece) & mask;; i = (i + 1) & mask) {
      uint32_t r = slots_[i];
      if (r == kNoRank) return kNoRank;
      if (bytes(r) == piece) return r;
    }
  }
  uint32_t byteRank(uint8_t b) const { return byteRanks_[b]; }

  static uint64_t hashBytes(std::string_view s);

 private:
  void buildIndex(const std::string& origin);

  std::string blob_;               // all token bytes, in rank order
  std::vector<uint32_t> offsets_;  // size()+1 offsets into blob_
  std::vector<uint32_t> slots_;    // hash slots holding ranks, kNoRank = empty
  uint32_t byteRanks_[256] = {};
};

// Standard base64 (RFC 4648, '=' padding); nullopt on malformed input.
std::optional<std::string> decodeBase64(std::string_view in);
std::string encodeBase64(std::string_view in);

}  // namespace k3::tok
