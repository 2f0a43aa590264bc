#include "k3/serve/prompt_render.h"

#include "k3/io/error.h"
#include "k3/serve/api_error.h"
#include "k3/tok/chat_encoder.h"

namespace k3::serve {

std::vector<int32_t> renderChatPrompt(const tok::Tokenizer& tok, const tok::ChatRequest& chat,
                                      const ReplyIdMemory* replies) {
  try {
    std::vector<uint32_t> ids;
    if (replies) {
      tok::ChatRequest withIds = chat;
      replies->recall(withIds);
      ids = tok::renderChat(tok, withIds).ids;
    } else {
      ids = tok::renderChat(tok, chat).ids;
    }
    return {ids.begin(), ids.end()};
  } catch (const k3::Error& e) {
    invalidRequest("messages", e.what());
  }
}

bool chatPromptThinks(const tok::ChatRequest& chat) { return chat.thinking && chat.addGenerationPrompt; }

std::vector<int32_t> completionPrompt(const tok::Tokenizer& tok, const CompletionRequest& r,
                                      std::optional<int64_t> bos, size_t vocabSize) {
  if (r.promptIsIds) {
    for (size_t i = 0; i < r.promptIds.size(); ++i)
      if (static_cast<size_t>(r.promptIds[i]) >= vocabSize)
        invalidRequest("prompt", "prompt[" + std::to_string(i) + "]: token id " + std::to_string(r.promptIds[i]) +
                                     " is outside the vocabulary [0, " + std::to_string(vocabSize) + ")");
    return r.promptIds;
  }
  std::vector<int32_t> ids;
  if (bos) ids.push_back(static_cast<int32_t>(*bos));
  for (uint32_t id : tok.encode(r.promptText, false)) ids.push_back(static_cast<int32_t>(id));
  if (ids.empty()) invalidRequest("prompt", "'prompt' is empty");
  return ids;
}

}  // namespace k3::serve
