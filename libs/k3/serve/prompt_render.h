// Request → prompt token ids: the chat template for chat completions, the
// raw text (BOS first, as `k3-run -p`) or the given ids for completions.
// Thread-safety: pure functions over a const Tokenizer; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "k3/serve/generation_request.h"
#include "k3/serve/reply_ids.h"
#include "k3/tok/tokenizer.h"

namespace k3::serve {

// Both refuse a prompt that leaves no room to generate in a context of `ctx`
// tokens (400 context_length_exceeded) as soon as encoding passes it: an
// 8 MiB prompt costs the work of ctx tokens, not of 8 MiB.
// With `replies`, assistant messages the server generated render as the ids
// it generated (reply_ids.h).
std::vector<int32_t> renderChatPrompt(const tok::Tokenizer& tok, const tok::ChatRequest& chat, size_t ctx,
                                      const ReplyIdMemory* replies = nullptr);
// Whether the rendered chat prompt ends inside the think channel.
bool chatPromptThinks(const tok::ChatRequest& chat);
std::vector<int32_t> completionPrompt(const tok::Tokenizer& tok, const CompletionRequest& r,
                                      std::optional<int64_t> bos, size_t vocabSize, size_t ctx);

// The 400 for a prompt of `promptTokens` (or, when `atLeast`, more than that)
// in a context of `ctx`.
[[noreturn]] void contextExceeded(const std::string& param, size_t ctx, size_t promptTokens, bool atLeast);

}  // namespace k3::serve
