// Token ids as text, for the encode/decode command line: lists of ids out
// (in: id_list_input.h), and decoded bytes as JSON.
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

// "1 2 3" or "[1,2,3]" (json=true).
std::string formatIds(const std::vector<uint32_t>& ids, bool json);
// {"text": "..."}; bytes that are not valid UTF-8 become U+FFFD.
std::string decodeJson(std::string_view bytes);
// Replaces each maximal invalid UTF-8 subsequence with U+FFFD.
std::string toValidUtf8(std::string_view bytes);

}  // namespace k3::tok
