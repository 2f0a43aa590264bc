#include "k3/tok/id_text.h"

#include "k3/io/error.h"
#include "k3/io/json_text.h"
#include "k3/tok/byte_level.h"
#include "k3/tok/hf_tokenizer_json.h"
#include "k3/tok/utf8_stream.h"

namespace k3::tok {

std::string formatIds(const std::vector<uint32_t>& ids, bool json) {
  std::string out = json ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += json ? "," : " ";
    out += std::to_string(ids[i]);
  }
  if (json) out += "]";
  return out;
}

std::string toValidUtf8(std::string_view s) {
  // Unicode "maximal subpart" replacement (as Rust's from_utf8_lossy): each
  // maximal prefix of a valid sequence that is cut short becomes one U+FFFD.
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const Utf8Prefix p = utf8PrefixAt(s, i);
    if (p.need != 0 && p.have == p.need) {
      out.append(s.substr(i, p.need));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += p.need == 0 ? 1 : p.have;
  }
  return out;
}

std::string decodeJson(std::string_view bytes) {
  return JsonObject(JsonObject::Spacing::Python).add("text", toValidUtf8(bytes)).str();
}

}  // namespace k3::tok
