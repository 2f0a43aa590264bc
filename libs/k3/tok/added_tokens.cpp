#include "k3/tok/added_tokens.h"

#include <algorithm>
#include <filesystem>
#include <simdjson.h>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3::tok {

AddedTokens AddedTokens::reserved(size_t numBase) {
  AddedTokens t;
  t.numBase_ = numBase;
  for (size_t i = 0; i < kNumAddedTokens; ++i) {
    uint32_t id = static_cast<uint32_t>(numBase + i);
    t.tokens_.push_back({id, cat("<|reserved_token_", id, "|>"), true});
  }
  t.index("reserved tokens");
  return t;
}

AddedTokens AddedTokens::fromConfig(const std::string& configPath, size_t numBase) {
  if (!std::filesystem::exists(configPath)) fail(ErrorKind::Missing, configPath, ": not found");
  return fromConfigText(readInputFile(configPath, kTokenizerConfigInput), numBase, configPath);
}

AddedTokens AddedTokens::fromConfigText(std::string_view text, size_t numBase, const std::string& origin) {
  AddedTokens t = reserved(numBase);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(text.data(), text.size()).get(root))
    fail(ErrorKind::Format, origin, ": not valid JSON");
  simdjson::dom::object decoder;
  auto field = root["added_tokens_decoder"];
  if (field.error() == simdjson::NO_SUCH_FIELD) return t;  // nothing named: all reserved
  if (field.get_object().get(decoder))
    fail(ErrorKind::Format, origin, ": added_tokens_decoder is not an object");
  for (auto [key, value] : decoder) {
    uint64_t id = 0;
    if (key.empty() || key.size() > 10) fail(ErrorKind::Format, origin, ": added_tokens_decoder key '", key, "' is not an id");
    for (char c : key) {
      if (c < '0' || c > '9') fail(ErrorKind::Format, origin, ": added_tokens_decoder key '", key, "' is not an id");
      id = id * 10 + uint64_t(c - '0');
    }
    if (id < numBase)
      fail(ErrorKind::Format, origin, ": added token id ", id, " collides with tiktoken rank (num_base ", numBase, ")");
    std::string_view content;
    if (value["content"].get_string().get(content) || content.empty())
      fail(ErrorKind::Format, origin, ": added token ", id, " has no string content");
    if (id >= numBase + kNumAddedTokens) {
      // Older Kimi copies name two ids past the 256 "<|reserved_token_ID|>":
      // harmless placeholders, skipped. Anything else there would be a token
      // the model cannot produce or read, dropped without a word.
      if (content == cat("<|reserved_token_", id, "|>")) continue;
      fail(ErrorKind::Format, origin, ": added token ", id, " '", content, "' is past the vocabulary (ids ", numBase,
           "..", numBase + kNumAddedTokens - 1, ")");
    }
    bool special = true;
    auto sp = value["special"];
    if (sp.error() != simdjson::NO_SUCH_FIELD && sp.get_bool().get(special))
      fail(ErrorKind::Format, origin, ": added token ", id, ": 'special' is not a boolean");
    AddedToken& tok = t.tokens_[id - numBase];
    tok.content = std::string(content);
    tok.hfSpecial = special;
  }
  t.index(origin);
  return t;
}

void AddedTokens::index(const std::string& origin) {
  byLength_.clear();
  std::fill(std::begin(firstBytes_), std::end(firstBytes_), false);
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    byLength_.push_back(i);
    firstBytes_[static_cast<unsigned char>(tokens_[i].content[0])] = true;
  }
  std::stable_sort(byLength_.begin(), byLength_.end(), [&](uint32_t a, uint32_t b) {
    return tokens_[a].content.size() > tokens_[b].content.size();
  });
  for (size_t i = 1; i < byLength_.size(); ++i) {
    // Equal contents are adjacent only if equal length; check all of that length.
    for (size_t j = i; j-- > 0;) {
      const std::string& a = tokens_[byLength_[i]].content;
      const std::string& b = tokens_[byLength_[j]].content;
      if (a.size() != b.size()) break;
      if (a == b)
        fail(ErrorKind::Format, origin, ": added tokens ", tokens_[byLength_[j]].id, " and ",
             tokens_[byLength_[i]].id, " have the same content '", a, "'");
    }
  }
}

std::optional<uint32_t> AddedTokens::find(std::string_view content) const {
  for (const AddedToken& t : tokens_)
    if (t.content == content) return t.id;
  return std::nullopt;
}

const AddedToken* AddedTokens::matchAt(std::string_view text, size_t pos) const {
  if (!firstBytes_[static_cast<unsigned char>(text[pos])]) return nullptr;
  std::string_view rest = text.substr(pos);
  for (uint32_t i : byLength_) {
    const std::string& c = tokens_[i].content;
    if (rest.size() >= c.size() && rest.compare(0, c.size(), c) == 0) return &tokens_[i];
  }
  return nullptr;
}

}  // namespace k3::tok
