#include "k3/tok/vocab.h"

#include <cstring>
#include <filesystem>
#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3::tok {
namespace {

int base64Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decodeBase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      unsigned char c = static_cast<unsigned char>(in[i + k]);
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after '='
      v[k] = base64Value(c);
      if (v[k] < 0) return std::nullopt;
    }
    uint32_t w = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>(w >> 16));
    if (pad < 2) out.push_back(static_cast<char>((w >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(w & 0xff));
  }
  return out;
}

std::string encodeBase64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t w = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) w |= uint32_t(uint8_t(in[i + 1])) << 8;
    if (i + 2 < in.size()) w |= uint32_t(uint8_t(in[i + 2]));
    out.push_back(kAlphabet[w >> 18]);
    out.push_back(kAlphabet[(w >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kAlphabet[(w >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? kAlphabet[w & 63] : '=');
  }
  return out;
}

Vocab Vocab::parse(std::string_view text, const std::string& origin) {
  Vocab v;
  std::vector<std::pair<uint32_t, std::string>> entries;  // (rank, bytes)
  size_t lineNo = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++lineNo;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;  // spec 7.1: blank lines are skipped
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == line.size())
      fail(ErrorKind::Format, origin, ": line ", lineNo, ": expected 'base64 rank'");
    std::optional<std::string> bytes = decodeBase64(line.substr(0, sp));
    if (!bytes || bytes->empty())
      fail(ErrorKind::Format, origin, ": line ", lineNo, ": invalid base64 token '", line.substr(0, sp), "'");
    uint64_t rank = 0;
    for (char c : line.substr(sp + 1)) {
      if (c < '0' || c > '9' || rank > UINT32_MAX / 10)
        fail(ErrorKind::Format, origin, ": line ", lineNo, ": invalid rank '", line.substr(sp + 1), "'");
      rank = rank * 10 + uint64_t(c - '0');
    }
    if (rank >= kNoRank) fail(ErrorKind::Format, origin, ": line ", lineNo, ": rank out of range");
    entries.emplace_back(static_cast<uint32_t>(rank), std::move(*bytes));
  }
  if (entries.empty()) fail(ErrorKind::Format, origin, ": no tokens");

  // Ranks must be exactly 0..n-1: place each entry, reject gaps and repeats.
  std::vector<int64_t> slotOf(entries.size(), -1);
  for (size_t i = 0; i < entries.size(); ++i) {
    uint32_t r = entries[i].first;
    if (r >= entries.size())
      fail(ErrorKind::Format, origin, ": rank ", r, " is beyond the ", entries.size(),
           " tokens (ranks must be contiguous from 0)");
    if (slotOf[r] >= 0) fail(ErrorKind::Format, origin, ": rank ", r, " appears twice");
    slotOf[r] = static_cast<int64_t>(i);
  }
  v.offsets_.reserve(entries.size() + 1);
  v.offsets_.push_back(0);
  for (size_t r = 0; r < entries.size(); ++r) {
    v.blob_ += entries[static_cast<size_t>(slotOf[r])].second;
    v.offsets_.push_back(static_cast<uint32_t>(v.blob_.size()));
  }
  v.buildIndex(origin);
  return v;
}

void Vocab::buildIndex(const std::string& origin) {
  size_t cap = 16;
  while (cap < size() * 2) cap <<= 1;
  slots_.assign(cap, kNoRank);
  for (uint32_t r = 0; r < size(); ++r) {
    std::string_view b = bytes(r);
    uint64_t h = hashBytes(b);
    for (uint64_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
      uint32_t other = static_cast<uint32_t>(slots_[i]);
      if (other == kNoRank) {
        slots_[i] = (h >> 32 << 32) | r;
        break;
      }
      if (bytes(other) == b)
        fail(ErrorKind::Format, origin, ": ranks ", other, " and ", r, " have the same bytes");
    }
  }
  // Fill the direct tables from the hash (rank() reads them first, so they
  // start out "absent" and are filled by probing the hash directly).
  auto hashed = [&](std::string_view b) {
    uint64_t h = hashBytes(b);
    for (uint64_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
      uint32_t r = static_cast<uint32_t>(slots_[i]);
      if (r == kNoRank || bytes(r) == b) return r;
    }
  };
  twoByteRanks_.assign(65536, kNoRank);
  for (uint32_t r = 0; r < size(); ++r)
    if (bytes(r).size() == 2) twoByteRanks_[uint8_t(bytes(r)[0]) << 8 | uint8_t(bytes(r)[1])] = r;
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    byteRanks_[b] = hashed(std::string_view(&c, 1));
    if (byteRanks_[b] == kNoRank)
      fail(ErrorKind::Format, origin, ": single byte 0x", std::hex, b, " has no rank (byte-level BPE needs all 256)");
  }
}

Vocab Vocab::load(const std::string& path) {
  if (!std::filesystem::exists(path)) fail(ErrorKind::Missing, path, ": tiktoken vocabulary not found");
  return parse(readInputFile(path, kTokenizerModelInput), path);
}

}  // namespace k3::tok
