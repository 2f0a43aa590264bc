// libFuzzer: request body bytes -> the server's request readers (chat
// completions and completions). Anything may be refused with an ApiError
// (a 400); nothing may crash, leak or hang, and a refusal is one line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "k3/serve/api_error.h"
#include "k3/serve/generation_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const k3::serve::RequestLimits limits{4096, 64, 4};
  for (int kind = 0; kind < 2; ++kind) {
    try {
      if (kind == 0) {
        const auto r = k3::serve::parseChatCompletionRequest(body, limits);
        if (r.chat.messages.empty() || r.params.maxTokens == 0 || r.params.maxTokens > limits.maxTokens) __builtin_trap();
      } else {
        const auto r = k3::serve::parseCompletionRequest(body, limits);
        if (r.promptIsIds == r.promptIds.empty() || r.params.stop.size() > limits.maxStops) __builtin_trap();
      }
    } catch (const k3::serve::ApiError& e) {
      if (e.status() != 400 || std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
    }
  }
  return 0;
}
