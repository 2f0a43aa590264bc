#include "k3/tok/grammar_vocab.h"

#include <numeric>
#include <string_view>

#include "k3/tok/grammar.h"

namespace k3::tok {
namespace {

std::vector<uint32_t> allRanks(const Vocab& v) {
  std::vector<uint32_t> ids(v.size());
  std::iota(ids.begin(), ids.end(), 0u);
  return ids;
}

// Code points in `s` when it is whole, valid UTF-8 (no overlongs, no
// surrogates, at most U+10FFFF) whose bytes `ok` accepts, else -1.
template <typename ByteOk>
int plainChars(std::string_view s, ByteOk ok) {
  int chars = 0;
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      if (!ok(c)) return -1;
      ++i;
    } else {
      size_t len;
      uint8_t lo = 0x80, hi = 0xBF;
      if (c >= 0xC2 && c <= 0xDF) len = 2;
      else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      else return -1;
      if (i + len > s.size()) return -1;
      for (size_t k = 1; k < len; ++k) {
        const uint8_t b = static_cast<uint8_t>(s[i + k]);
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return -1;
      }
      i += len;
    }
    ++chars;
  }
  return chars;
}

template <typename ByteOk>
GrammarVocab::StringView stringView(const Vocab& v, ByteOk ok) {
  std::vector<int16_t> plain(v.size());
  std::vector<uint32_t> others;
  for (uint32_t id = 0; id < v.size(); ++id) {
    const int n = plainChars(v.bytes(id), ok);
    plain[id] = static_cast<int16_t>(n > INT16_MAX ? -1 : n);
    if (plain[id] < 0) others.push_back(id);
  }
  return {std::move(plain), TokenTrie(v, others)};
}

}  // namespace

GrammarVocab::GrammarVocab(const Tokenizer& tok)
    : tok_(tok),
      all_(tok.vocab(), allRanks(tok.vocab())),
      json_(stringView(tok.vocab(), [](uint8_t c) { return c >= 0x20 && c != '"' && c != '\\'; })),
      raw_(stringView(tok.vocab(), [](uint8_t c) { return c >= 0x20 || c == '\t' || c == '\n' || c == '\r'; })) {
  const std::pair<const char*, int> xtml[] = {
      {"<|open|>", kSymOpen}, {"<|close|>", kSymClose}, {"<|sep|>", kSymSep}, {"<|end_of_msg|>", kSymEndOfMsg}};
  for (const auto& [content, sym] : xtml)
    if (auto id = tok.specialId(content)) specials_.push_back({*id, sym});
}

}  // namespace k3::tok
