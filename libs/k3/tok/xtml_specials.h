// The four XTML structure tokens (spec 7.6): the only ids that are chat
// structure. Everything that renders or reads the chat format looks them up
// here, so a tokenizer without them fails the same way everywhere.
// Thread-safety: a value; safe to share.
#pragma once

#include <cstdint>
#include <string_view>

#include "k3/tok/tokenizer.h"

namespace k3::tok {

struct XtmlSpecials {
  uint32_t open, close, sep, endOfMsg;
};

// Throws k3::Error(Missing), naming `user` (e.g. "chat prompt"), when the
// tokenizer lacks one of them.
XtmlSpecials xtmlSpecials(const Tokenizer& tok, std::string_view user);

}  // namespace k3::tok
