#include "k3/tok/chat_output_error.h"

#include "k3/io/error.h"
#include "k3/io/json_text.h"
#include "k3/tok/id_text.h"

namespace k3::tok {

std::string ChatOutputError::message() const { return cat("token ", position, ": expected ", expected, ", found ", found); }

std::string quoteSnippet(std::string_view bytes, size_t maxBytes) {
  std::string text = toValidUtf8(bytes);
  bool cut = false;
  if (text.size() > maxBytes) {
    size_t end = maxBytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a character boundary
    text.resize(end);
    cut = true;
  }
  std::string out;
  appendJsonStringUtf8(out, text);
  if (cut) out += "…";
  return out;
}

}  // namespace k3::tok
