#include "k3/tok/hf_tokenizer_json.h"

#include <algorithm>

#include "k3/tok/byte_level.h"
#include "k3/tok/pretokenizer.h"

namespace k3::tok {

void appendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          out += "\\u00";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 15]);
      }
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

std::vector<Merge> rankOrderedMerges(const Vocab& vocab) {
  size_t n = vocab.size();
  // Reachability, shortest tokens first: a token can appear as a BPE symbol
  // only if some split of it is two reachable tokens.
  std::vector<uint32_t> byLength(n);
  for (uint32_t r = 0; r < n; ++r) byLength[r] = r;
  std::stable_sort(byLength.begin(), byLength.end(),
                   [&](uint32_t a, uint32_t b) { return vocab.bytes(a).size() < vocab.bytes(b).size(); });
  // A split (a, b) of t needs tokens of both lengths: looking a length up is
  // O(1), hashing a substring is O(its length). Without this filter one
  // hostile 300 KB token cost 300k hashes of ~150 KB each (16 s).
  std::vector<bool> hasLength(n ? vocab.bytes(byLength.back()).size() + 1 : 1, false);
  for (uint32_t r = 0; r < n; ++r) hasLength[vocab.bytes(r).size()] = true;
  std::vector<bool> reachable(n, false);
  std::vector<Merge> merges;
  for (uint32_t r : byLength) {
    std::string_view t = vocab.bytes(r);
    if (t.size() == 1) {
      reachable[r] = true;
      continue;
    }
    for (size_t k = 1; k < t.size(); ++k) {
      if (!hasLength[k] || !hasLength[t.size() - k]) continue;
      uint32_t a = vocab.rank(t.substr(0, k));
      if (a == kNoRank || !reachable[a]) continue;
      uint32_t b = vocab.rank(t.substr(k));
      if (b == kNoRank || !reachable[b]) continue;
      reachable[r] = true;
      merges.push_back({a, b, r});
    }
  }
  // Stable by (result rank, split position): the loop above added each
  // token's splits in increasing position.
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& x, const Merge& y) { return x.result < y.result; });
  return merges;
}

std::string buildHfTokenizerJson(const Tokenizer& tok, HfJsonStats* stats) {
  const Vocab& vocab = tok.vocab();
  ByteLevelAlphabet alphabet;
  std::vector<std::string> keys(vocab.size());
  for (uint32_t r = 0; r < vocab.size(); ++r) keys[r] = alphabet.encode(vocab.bytes(r));
  std::vector<Merge> merges = rankOrderedMerges(vocab);

  std::string out;
  out.reserve(vocab.size() * 40 + merges.size() * 24);
  out += "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [";
  const auto& added = tok.addedTokens().all();
  for (size_t i = 0; i < added.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    out += "{\"id\": " + std::to_string(added[i].id) + ", \"content\": ";
    appendJsonString(out, added[i].content);
    out += ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": ";
    out += added[i].hfSpecial ? "true}" : "false}";
  }
  out += "\n  ],\n  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n";
  out += "    {\"type\": \"Split\", \"pattern\": {\"Regex\": ";
  appendJsonString(out, kKimiPattern);
  out += "}, \"behavior\": \"Isolated\", \"invert\": false},\n";
  out += "    {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}\n  ]},\n";
  out += "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": false, \"use_regex\": true},\n";
  out += "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": true, \"use_regex\": true},\n";
  out += "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
         "    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
         "    \"byte_fallback\": false,\n    \"ignore_merges\": true,\n    \"vocab\": {";
  for (uint32_t r = 0; r < vocab.size(); ++r) {
    out += r ? ",\n      " : "\n      ";
    appendJsonString(out, keys[r]);
    out += ": " + std::to_string(r);
  }
  out += "\n    },\n    \"merges\": [";
  for (size_t i = 0; i < merges.size(); ++i) {
    out += i ? ",\n      " : "\n      ";
    // Byte-level keys never contain U+0020, so the "a b" form is unambiguous.
    appendJsonString(out, keys[merges[i].left] + " " + keys[merges[i].right]);
  }
  out += "\n    ]\n  }\n}\n";

  if (stats) {
    stats->vocab = vocab.size();
    stats->merges = merges.size();
    stats->addedTokens = added.size();
    size_t produced = 0;
    std::vector<bool> seen(vocab.size(), false);
    for (const Merge& m : merges)
      if (!seen[m.result]) seen[m.result] = true, ++produced;
    stats->unreachable = vocab.size() - 256 - produced;
    stats->addedShadowed = 0;
    for (const AddedToken& t : added) {
      // The key equals the content iff the content's bytes are all byte-level
      // printable and the raw bytes are a rank.
      if (alphabet.encode(t.content) == t.content && vocab.rank(t.content) != kNoRank) ++stats->addedShadowed;
    }
  }
  return out;
}

}  // namespace k3::tok
