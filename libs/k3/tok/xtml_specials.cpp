#include "k3/tok/xtml_specials.h"

#include "k3/io/error.h"

namespace k3::tok {

XtmlSpecials xtmlSpecials(const Tokenizer& tok, std::string_view user) {
  auto require = [&](std::string_view content) {
    std::optional<uint32_t> id = tok.specialId(content);
    if (!id) fail(ErrorKind::Missing, user, ": the tokenizer has no ", content, " token (tokenizer_config.json absent?)");
    return *id;
  };
  return {require("<|open|>"), require("<|close|>"), require("<|sep|>"), require("<|end_of_msg|>")};
}

}  // namespace k3::tok
