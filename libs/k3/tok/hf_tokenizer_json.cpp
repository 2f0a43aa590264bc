#include "k3/tok/hf_tokenizer_json.h"

#include <algorithm>
#include <unordered_map>

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

namespace {

// The rank of any substring of one token in O(1): every vocabulary token's
// polynomial hash (mod 2^61-1, keyed with its length) in a table, the
// token's prefix hashes computed as the split moves right and its suffix
// hashes once. A hit is confirmed byte for byte, so a collision costs time,
// never a wrong merge. Linear in the token's length plus the merges found;
// hashing each half per split instead was quadratic (a hostile 300 KB token:
// 16 s).
class SplitRanks {
 public:
  explicit SplitRanks(const Vocab& v) : vocab_(v) {
    table_.reserve(v.size());
    for (uint32_t r = 0; r < v.size(); ++r) {
      const std::string_view t = v.bytes(r);
      uint64_t h = 0;
      for (size_t i = t.size(); i-- > 0;) h = add(mul(h, kBase), byteValue(t[i]));
      table_.emplace(key(h, t.size()), r);
    }
  }

  // Calls found(k, a, b) for every split t = t[0:k] + t[k:] into two tokens, k increasing.
  template <class F>
  void forEachSplit(std::string_view t, F&& found) {
    const size_t L = t.size();
    suffix_.assign(L + 1, 0);
    for (size_t i = L; i-- > 0;) suffix_[i] = add(byteValue(t[i]), mul(kBase, suffix_[i + 1]));
    uint64_t prefix = 0, power = 1;
    for (size_t k = 1; k < L; ++k) {
      prefix = add(prefix, mul(byteValue(t[k - 1]), power));
      power = mul(power, kBase);
      // Bytes are compared only once both halves' keys are in the table: a
      // split into two tokens is a merge (output), anything else costs O(1).
      if (!table_.count(key(prefix, k)) || !table_.count(key(suffix_[k], L - k))) continue;
      const uint32_t a = lookup(prefix, t.substr(0, k));
      if (a == kNoRank) continue;
      const uint32_t b = lookup(suffix_[k], t.substr(k));
      if (b != kNoRank) found(k, a, b);
    }
  }

 private:
  static constexpr uint64_t kMod = (uint64_t{1} << 61) - 1;
  static constexpr uint64_t kBase = 1000003;
  static uint64_t byteValue(char c) { return static_cast<unsigned char>(c) + 1u; }
  static uint64_t add(uint64_t a, uint64_t b) {
    const uint64_t s = a + b;
    return s >= kMod ? s - kMod : s;
  }
  static uint64_t mul(uint64_t a, uint64_t b) {
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    const uint64_t r = static_cast<uint64_t>(p & kMod) + static_cast<uint64_t>(p >> 61);
    return r >= kMod ? r - kMod : r;
  }
  static uint64_t key(uint64_t hash, size_t length) { return hash * 0x9E3779B97F4A7C15ull ^ length; }

  uint32_t lookup(uint64_t hash, std::string_view piece) const {
    const auto [from, to] = table_.equal_range(key(hash, piece.size()));
    for (auto it = from; it != to; ++it)
      if (vocab_.bytes(it->second) == piece) return it->second;
    return kNoRank;
  }

  const Vocab& vocab_;
  std::unordered_multimap<uint64_t, uint32_t> table_;
  std::vector<uint64_t> suffix_;
};

}  // namespace

std::vector<Merge> rankOrderedMerges(const Vocab& vocab) {
  size_t n = vocab.size();
  // Reachability, shortest tokens first: a token can appear as a BPE symbol
  // only if some split of it is two reachable tokens.
  std::vector<uint32_t> byLength(n);
  for (uint32_t r = 0; r < n; ++r) byLength[r] = r;
  std::stable_sort(byLength.begin(), byLength.end(),
                   [&](uint32_t a, uint32_t b) { return vocab.bytes(a).size() < vocab.bytes(b).size(); });
  std::vector<bool> reachable(n, false);
  std::vector<Merge> merges;
  SplitRanks splits(vocab);
  for (uint32_t r : byLength) {
    std::string_view t = vocab.bytes(r);
    if (t.size() == 1) {
      reachable[r] = true;
      continue;
    }
    splits.forEachSplit(t, [&](size_t, uint32_t a, uint32_t b) {
      if (!reachable[a] || !reachable[b]) return;
      reachable[r] = true;
      merges.push_back({a, b, r});
    });
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
