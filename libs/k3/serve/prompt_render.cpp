#include "k3/serve/prompt_render.h"

#include "k3/io/error.h"
#include "k3/serve/api_error.h"
#include "k3/tok/chat_encoder.h"

namespace k3::serve {

void contextExceeded(const std::string& param, size_t ctx, size_t promptTokens, bool atLeast) {
  throw ApiError(400, "invalid_request_error", param, "context_length_exceeded",
                 "this model's context is " + std::to_string(ctx) + " tokens (--ctx); the prompt has " +
                     (atLeast ? "more than " : "") + std::to_string(promptTokens) +
                     " tokens, leaving no room to generate");
}

std::vector<int32_t> renderChatPrompt(const tok::Tokenizer& tok, const tok::ChatRequest& chat, size_t ctx,
                                      const ReplyIdMemory* replies) {
  try {
    // One id more than fits is enough to know: the prompt needs ctx - 1 ids at most.
    tok::RenderedChat r;
    if (replies) {
      tok::ChatRequest withIds = chat;
      replies->recall(withIds);
      r = tok::renderChat(tok, withIds, ctx - 1);
    } else {
      r = tok::renderChat(tok, chat, ctx - 1);
    }
    if (r.overLimit) contextExceeded("messages", ctx, ctx - 1, true);
    return {r.ids.begin(), r.ids.end()};
  } catch (const k3::Error& e) {
    invalidRequest("messages", e.what());
  }
}

bool chatPromptThinks(const tok::ChatRequest& chat) { return chat.thinking && chat.addGenerationPrompt; }

std::vector<int32_t> completionPrompt(const tok::Tokenizer& tok, const CompletionRequest& r,
                                      std::optional<int64_t> bos, size_t vocabSize, size_t ctx) {
  if (r.promptIsIds) {
    for (size_t i = 0; i < r.promptIds.size(); ++i)
      if (static_cast<size_t>(r.promptIds[i]) >= vocabSize)
        invalidRequest("prompt", "prompt[" + std::to_string(i) + "]: token id " + std::to_string(r.promptIds[i]) +
                                     " is outside the vocabulary [0, " + std::to_string(vocabSize) + ")");
    return r.promptIds;
  }
  std::vector<uint32_t> enc;
  if (bos) enc.push_back(static_cast<uint32_t>(*bos));
  if (!tok.encodeAppendUpTo(r.promptText, false, enc, ctx - 1)) contextExceeded("prompt", ctx, ctx - 1, true);
  if (enc.empty()) invalidRequest("prompt", "'prompt' is empty");
  return {enc.begin(), enc.end()};
}

}  // namespace k3::serve
