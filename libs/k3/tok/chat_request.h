// A conversation as JSON, for `k3-tokgen chat` and scripts:
// {"messages": [{"role": "user", "content": "...", "reasoning": "..."}],
//  "thinking": true, "add_generation_prompt": true}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k3/tok/chat.h"

namespace k3::tok {

struct ChatRequest {
  std::vector<ChatMessage> messages;
  ChatOptions options;
};

ChatRequest parseChatRequest(std::string_view json, const std::string& origin);

}  // namespace k3::tok
