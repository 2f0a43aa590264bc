// Helpers for the output-parser tests: the real Kimi tokenizer and an XTML id
// builder written from spec §7.6 (OPEN/CLOSE as segments, values escaped
// & -> &amp; then " -> &quot;), independent of the library's encoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "k3/tok/chat_output_message.h"
#include "k3/tok/chat_output_parser.h"
#include "k3/tok/tokenizer.h"
#include "support/test_env.h"

namespace k3test {

inline const k3::tok::Tokenizer& kimiTokenizer() {
  static const k3::tok::Tokenizer tok = k3::tok::Tokenizer::fromFiles(
      kimiDataDir() + "/tiktoken.model", kimiDataDir() + "/k3_added_tokens.reconstructed.json");
  return tok;
}

inline std::string xtmlEscape(std::string_view v) {
  std::string amp;
  for (char c : v) amp += c == '&' ? std::string("&amp;") : std::string(1, c);
  std::string out;
  for (char c : amp) out += c == '"' ? std::string("&quot;") : std::string(1, c);
  return out;
}

class XtmlIds {
 public:
  explicit XtmlIds(const k3::tok::Tokenizer& tok) : tok_(tok) {}

  using Attrs = std::vector<std::pair<std::string, std::string>>;
  XtmlIds& open(std::string_view tag, const Attrs& attrs = {}) {
    special("<|open|>");
    text(tag);
    for (const auto& [k, v] : attrs) text(" " + k).text("=\"").text(xtmlEscape(v)).text("\"");
    return special("<|sep|>");
  }
  XtmlIds& close(std::string_view tag) { return special("<|close|>").text(tag).special("<|sep|>"); }
  XtmlIds& text(std::string_view segment) {
    tok_.encodeAppend(segment, false, ids);
    return *this;
  }
  XtmlIds& special(std::string_view content) {
    ids.push_back(*tok_.specialId(content));
    return *this;
  }
  XtmlIds& endOfMessage() { return special("<|end_of_msg|>"); }
  // CLOSE(message) <|end_of_msg|>
  XtmlIds& end() { return close("message").endOfMessage(); }
  size_t size() const { return ids.size(); }

  std::vector<uint32_t> ids;

 private:
  const k3::tok::Tokenizer& tok_;
};

inline k3::tok::ParsedChatOutput parseOutput(const k3::tok::Tokenizer& tok, const std::vector<uint32_t>& ids,
                                            const std::vector<k3::tok::ToolSpec>& tools, bool thinking) {
  return k3::tok::parseChatOutput(tok, ids, tools, thinking);
}

}  // namespace k3test
