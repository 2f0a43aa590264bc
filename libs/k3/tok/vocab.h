// Vocab: the rank table of a tiktoken.model file (`base64(bytes) SP rank` per
// line). Ranks are token ids 0..n-1; the table answers bytes -> rank (an
// open-addressing hash over one byte blob) and rank -> bytes.
// Thread-safety: immutable after parse; safe to share across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
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
  // kNoRank when `piece` is not a token. Slots hold (hash tag << 32 | rank) so
  // most misses are rejected without touching the token bytes.
  uint32_t rank(std::string_view piece) const {
    // One- and two-byte strings (every initial BPE pair) use direct tables.
    if (piece.size() <= 2) {
      if (piece.size() == 2) return twoByteRanks_[uint8_t(piece[0]) << 8 | uint8_t(piece[1])];
      if (piece.size() == 1) return byteRanks_[uint8_t(piece[0])];
    }
    uint64_t h = hashBytes(piece);
    uint64_t mask = slots_.size() - 1;
    uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t i = h & mask;; i = (i + 1) & mask) {
      uint64_t slot = slots_[i];
      uint32_t r = static_cast<uint32_t>(slot);
      if (r == kNoRank) return kNoRank;
      if (static_cast<uint32_t>(slot >> 32) == tag && offsets_[r + 1] - offsets_[r] == piece.size() &&
          std::memcmp(blob_.data() + offsets_[r], piece.data(), piece.size()) == 0)
        return r;
    }
  }
  uint32_t byteRank(uint8_t b) const { return byteRanks_[b]; }

  static uint64_t hashBytes(std::string_view s) {
    // Token lookups dominate encoding: one multiply-xorshift round per 8 bytes.
    auto mix = [](uint64_t x) {
      x ^= x >> 32;
      x *= 0xd6e8feb86659fd93ULL;
      return x ^ (x >> 32);
    };
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (s.size() * 0xff51afd7ed558ccdULL);
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
    }
    if (i < s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
    }
    return mix(h);
  }

 private:
  void buildIndex(const std::string& origin);

  std::string blob_;               // all token bytes, in rank order
  std::vector<uint32_t> offsets_;  // size()+1 offsets into blob_
  std::vector<uint64_t> slots_;    // tag << 32 | rank; rank kNoRank = empty
  uint32_t byteRanks_[256] = {};
  std::vector<uint32_t> twoByteRanks_;  // 65536 entries, kNoRank if absent
};

// Standard base64 (RFC 4648, '=' padding); nullopt on malformed input.
std::optional<std::string> decodeBase64(std::string_view in);
std::string encodeBase64(std::string_view in);

}  // namespace k3::tok
