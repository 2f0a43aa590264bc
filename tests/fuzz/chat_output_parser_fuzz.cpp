// libFuzzer target: the streaming output parser (k3::tok::ChatOutputParser)
// on random id streams. Each input byte is one id, biased towards what makes
// the grammar go deep: 0xF0-0xF3 are the four XTML specials, 0xF4/0xF5 another
// added token and an id outside the vocabulary, 0xD0-0xEF the tag/attribute
// words of a small vocabulary (with split UTF-8 pieces and "<|open|>" as text), anything else the
// single-byte token of that byte. The first byte picks think/response start.
// Beyond "no crash, no hang", every run checks the event-stream invariants
// and that a clean parse re-renders (renderAssistantBody) to a parse that is
// a fixpoint; without calls the message must come back exactly.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "k3/io/error.h"
#include "k3/tok/chat_encoder.h"
#include "k3/tok/chat_output_message.h"
#include "k3/tok/id_text.h"
#include "k3/tok/tokenizer.h"
#include "k3/tok/vocab.h"

namespace {

using k3::tok::ChatMessage;
using k3::tok::ChatOutputEvent;

// 32 words, ids 256..287 (bytes 0xD0..0xEF).
const char* const kWords[32] = {
    "think", "response", "tools", "call", "argument", "json", "message", " tool",
    " index", " key", " type", "=\"", "<|open|>", "get_weather", "search", "city",
    "days", "string", "number", "boolean", "null", "object", "array", "true",
    "0.25", "&quot;", "&amp;", "[1, 2]", "{\"a\": 1.5}", "\xE4\xBD", "\xF0\x9F", " 3.0"};

struct Fixture {
  k3::tok::Tokenizer tok;
  std::vector<k3::tok::ToolSpec> tools;
  uint32_t numBase;
};

k3::tok::Tokenizer makeTokenizer() {
  std::string model;
  for (int b = 0; b < 256; ++b) model += k3::tok::encodeBase64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  for (int i = 0; i < 32; ++i) model += k3::tok::encodeBase64(kWords[i]) + " " + std::to_string(256 + i) + "\n";
  const size_t numBase = 256 + 32;
  auto entry = [&](size_t off, const char* content) {
    return "\"" + std::to_string(numBase + off) + "\": {\"content\": \"" + content + "\"}";
  };
  std::string config = "{\"added_tokens_decoder\": {" + entry(0, "[BOS]") + ", " + entry(1, "[EOS]") + ", " +
                       entry(2, "<|end_of_msg|>") + ", " + entry(3, "<|open|>") + ", " + entry(4, "<|close|>") + ", " +
                       entry(5, "<|sep|>") + "}}";
  return k3::tok::Tokenizer(k3::tok::Vocab::parse(model, "fuzz.tiktoken"),
                            k3::tok::AddedTokens::fromConfigText(config, numBase, "fuzz.config"));
}

const Fixture& fixture() {
  static const Fixture f{makeTokenizer(),
                         {{"get_weather", {{"city", "string"}, {"days", "integer"}}},
                          {"search", {{"city", ""}, {"days", "number"}, {"string", "object"}, {"number", "array"}}}},
                         256 + 32};
  return f;
}

uint32_t idOf(uint8_t b, uint32_t numBase) {
  static const uint32_t kStructure[4] = {3, 4, 5, 2};  // open, close, sep, end_of_msg (offsets above numBase)
  if (b >= 0xF0 && b <= 0xF3) return numBase + kStructure[b - 0xF0];
  if (b == 0xF4) return numBase + 1;                                             // [EOS]: neither text nor structure
  if (b == 0xF5) return numBase + 1000;                                          // outside the vocabulary
  if (b >= 0xD0 && b <= 0xEF) return 256 + (b - 0xD0);
  return b;
}

bool sameMessage(const ChatMessage& a, const ChatMessage& b) {
  if (a.reasoning != b.reasoning || a.content != b.content || a.toolCalls.size() != b.toolCalls.size()) return false;
  for (size_t i = 0; i < a.toolCalls.size(); ++i)
    if (a.toolCalls[i].id != b.toolCalls[i].id || a.toolCalls[i].name != b.toolCalls[i].name ||
        a.toolCalls[i].arguments != b.toolCalls[i].arguments)
      return false;
  return true;
}

void checkEvents(const k3::tok::ParsedChatOutput& r, const Fixture& f) {
  int nextIndex = 1;
  bool done = false;
  for (size_t i = 0; i < r.events.size(); ++i) {
    const ChatOutputEvent& e = r.events[i];
    switch (e.kind) {
      case ChatOutputEvent::Kind::Reasoning:
      case ChatOutputEvent::Kind::Content:
        if (e.text.empty() || k3::tok::toValidUtf8(e.text) != e.text || done) std::abort();
        break;
      case ChatOutputEvent::Kind::ToolCall: {
        if (e.index != nextIndex++ || done || e.call.id != "call_" + std::to_string(e.index)) std::abort();
        bool declared = false;
        for (const auto& t : f.tools) declared = declared || t.name == e.call.name;
        if (!declared) std::abort();
        break;
      }
      case ChatOutputEvent::Kind::Done:
        if (done) std::abort();
        done = true;
        break;
      case ChatOutputEvent::Kind::Malformed:
        if (i + 1 != r.events.size()) std::abort();  // the first violation ends the stream
        break;
    }
  }
  if (r.error.has_value() != (!r.events.empty() && r.events.back().kind == ChatOutputEvent::Kind::Malformed)) std::abort();
  if (r.end.complete != (done && !r.error)) std::abort();
  if (!r.error && r.finishReason != (done ? (r.message.toolCalls.empty() ? "stop" : "tool_calls") : "length")) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Fixture& f = fixture();
  const bool thinking = data[0] & 1;
  std::vector<uint32_t> ids;
  ids.reserve(size - 1);
  for (size_t i = 1; i < size; ++i) ids.push_back(idOf(data[i], f.numBase));

  const k3::tok::ParsedChatOutput r = k3::tok::parseChatOutput(f.tok, ids, f.tools, thinking);
  checkEvents(r, f);
  if (r.error || !r.end.complete) return 0;

  // A clean message renders back; its parse is then a fixpoint of
  // render∘parse (values re-dumped by json.dumps rules may change once).
  std::vector<uint32_t> again;
  try {
    again = k3::tok::renderAssistantBody(f.tok, r.message, thinking).ids;
  } catch (const k3::Error&) {
    if (r.message.toolCalls.empty()) std::abort();  // text alone always renders
    return 0;                                       // e.g. a raw block whose text is JSON but no object
  }
  const k3::tok::ParsedChatOutput r2 = k3::tok::parseChatOutput(f.tok, again, f.tools, thinking);
  if (r.message.toolCalls.empty() && (r2.error || !sameMessage(r.message, r2.message))) std::abort();
  if (r2.error || !r2.end.complete) return 0;  // a raw block re-rendered as typed arguments may break a declared type
  const std::vector<uint32_t> third = k3::tok::renderAssistantBody(f.tok, r2.message, thinking).ids;
  const k3::tok::ParsedChatOutput r3 = k3::tok::parseChatOutput(f.tok, third, f.tools, thinking);
  if (r3.error || !sameMessage(r2.message, r3.message)) std::abort();
  return 0;
}
