#include "k3/tok/tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "k3/io/error.h"
#include "k3/tok/bpe.h"

namespace k3::tok {

Tokenizer::Tokenizer(Vocab vocab, AddedTokens added)
    : vocab_(std::move(vocab)), added_(std::move(added)) {
  if (added_.numBase() != vocab_.size())
    fail(ErrorKind::Internal, "tokenizer: added tokens start at ", added_.numBase(), " but the vocabulary has ",
         vocab_.size(), " ranks");
  for (uint32_t r = 0; r < vocab_.size(); ++r) longestToken_ = std::max(longestToken_, vocab_.bytes(r).size());
}

Tokenizer Tokenizer::fromFiles(const std::string& tiktokenPath, const std::string& configPathOrEmpty) {
  Vocab vocab = Vocab::load(tiktokenPath);
  size_t numBase = vocab.size();
  AddedTokens added = configPathOrEmpty.empty() ? AddedTokens::reserved(numBase)
                                                : AddedTokens::fromConfig(configPathOrEmpty, numBase);
  return Tokenizer(std::move(vocab), std::move(added));
}

Tokenizer Tokenizer::fromDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path model = fs::path(dir) / "tiktoken.model";
  fs::path config = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(model)) fail(ErrorKind::Missing, model.string(), ": not found (tokenizer directory)");
  return fromFiles(model.string(), fs::exists(config) ? config.string() : std::string());
}

bool Tokenizer::encodeOrdinary(std::string_view text, std::vector<uint32_t>& out, size_t limit) const {
  if (limit == SIZE_MAX) {
    pre_.split(text, [&](std::string_view piece) { bytePairEncode(vocab_, piece, out); });
    return true;
  }
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pre_.pieceEnd(text, pos);
    if (out.size() >= limit + 1) return false;
    const size_t room = limit + 1 - out.size();  // ids that still fit, and one more
    // Fewer than (bytes / longest token) ids cannot cover the piece.
    if ((end - pos) / longestToken_ > room) return false;
    bytePairEncode(vocab_, text.substr(pos, end - pos), out);
    pos = end;
  }
  return out.size() <= limit;
}

void Tokenizer::encodeAppend(std::string_view text, bool allowSpecial, std::vector<uint32_t>& out) const {
  encodeAppendUpTo(text, allowSpecial, out, SIZE_MAX);
}

bool Tokenizer::encodeAppendUpTo(std::string_view text, bool allowSpecial, std::vector<uint32_t>& out,
                                 size_t limit) const {
  if (text.empty()) return out.size() <= limit;
  if (!allowSpecial) return encodeOrdinary(text, out, limit);
  // tiktoken: split at special-token matches; each stretch between them is
  // pre-tokenized on its own (a lookahead never sees the special's text).
  size_t segment = 0;
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* hit = added_.mayStartWith(static_cast<unsigned char>(text[pos])) ? added_.matchAt(text, pos)
                                                                                        : nullptr;
    if (!hit) {
      ++pos;
      continue;
    }
    if (!encodeOrdinary(text.substr(segment, pos - segment), out, limit)) return false;
    out.push_back(hit->id);
    if (out.size() > limit) return false;
    pos += hit->content.size();
    segment = pos;
  }
  return encodeOrdinary(text.substr(segment), out, limit);
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, bool allowSpecial) const {
  std::vector<uint32_t> out;
  out.reserve(text.size() / 3 + 4);
  encodeAppend(text, allowSpecial, out);
  return out;
}

std::string Tokenizer::tokenBytes(uint32_t id) const {
  if (id < numBase()) return std::string(vocab_.bytes(id));
  if (const AddedToken* t = added_.byId(id)) return t->content;
  fail(ErrorKind::Usage, "tokenizer: token id ", id, " is outside the vocabulary (size ", vocabSize(), ")");
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) {
    if (id < numBase()) {
      out += vocab_.bytes(id);
    } else if (const AddedToken* t = added_.byId(id)) {
      out += t->content;
    } else {
      fail(ErrorKind::Usage, "tokenizer: token id ", id, " is outside the vocabulary (size ", vocabSize(), ")");
    }
  }
  return out;
}

bool Tokenizer::hfSpecial(uint32_t id) const {
  const AddedToken* t = added_.byId(id);
  return t && t->hfSpecial;
}

}  // namespace k3::tok
