#include "k3/serve/reply_ids.h"

#include "k3/tok/chat_encoder.h"
#include "k3/tok/id_text.h"
#include "k3/tok/xtml_specials.h"

namespace k3::serve {

namespace {

// A message body as runs: a structure token, or the bytes between two.
struct Run {
  bool special = false;
  uint32_t id = 0;
  std::string text;
  std::vector<uint32_t> ids;  // the run's ids
};

bool isStructure(const tok::XtmlSpecials& sp, uint32_t id) {
  return id == sp.open || id == sp.close || id == sp.sep || id == sp.endOfMsg;
}

std::vector<Run> runsOf(const tok::Tokenizer& tok, const tok::XtmlSpecials& sp, std::span<const uint32_t> ids) {
  std::vector<Run> runs;
  for (uint32_t id : ids) {
    if (isStructure(sp, id)) {
      runs.push_back({true, id, {}, {id}});
    } else {
      if (runs.empty() || runs.back().special) runs.push_back({});
      runs.back().text += tok.tokenBytes(id);
      runs.back().ids.push_back(id);
    }
  }
  return runs;
}

std::string keyOf(const tok::ChatMessage& m, bool thinking) {
  std::string k = thinking ? "T" : "R";
  auto field = [&k](const std::string& s) {
    k += std::to_string(s.size());
    k += ':';
    k += s;
  };
  field(m.reasoning);
  std::string content;
  for (const std::string& part : m.content) content += part;
  field(content);
  for (const tok::ToolCall& c : m.toolCalls) {
    field(c.name);
    field(c.arguments);
  }
  return k;
}

}  // namespace

namespace {

std::optional<std::vector<uint32_t>> matchBody(const tok::Tokenizer& tok, const tok::ChatMessage& reply, bool thinking,
                                               std::span<const int32_t> generated) {
  const tok::XtmlSpecials sp = tok::xtmlSpecials(tok, "reply ids");
  std::vector<uint32_t> rendered;
  try {
    rendered = tok::renderAssistantBody(tok, reply, thinking).ids;
  } catch (const std::exception&) {
    return std::nullopt;  // not a message the encoder can render
  }
  const std::vector<uint32_t> gen(generated.begin(), generated.end());
  const std::vector<Run> want = runsOf(tok, sp, rendered), got = runsOf(tok, sp, gen);
  if (got.size() > want.size()) return std::nullopt;
  std::vector<uint32_t> body;
  for (size_t i = 0; i < got.size(); ++i) {
    // Text as the client saw it: bytes that were not UTF-8 reached it as U+FFFD.
    if (got[i].special != want[i].special || got[i].id != want[i].id || tok::toValidUtf8(got[i].text) != want[i].text)
      return std::nullopt;
    body.insert(body.end(), got[i].ids.begin(), got[i].ids.end());
  }
  for (size_t i = got.size(); i < want.size(); ++i) body.insert(body.end(), want[i].ids.begin(), want[i].ids.end());
  return body;
}

}  // namespace

std::optional<std::vector<uint32_t>> generatedBody(const tok::Tokenizer& tok, const tok::ChatMessage& reply,
                                                   bool thinking, std::span<const int32_t> generated) {
  if (auto body = matchBody(tok, reply, thinking, generated)) return body;
  // The last id may be one the message does not show (an eos that ended it).
  if (!generated.empty()) return matchBody(tok, reply, thinking, generated.first(generated.size() - 1));
  return std::nullopt;
}

void ReplyIdMemory::remember(const tok::Tokenizer& tok, const tok::ChatMessage& reply, bool thinking,
                             std::span<const int32_t> generated) {
  if (max_ == 0) return;
  auto body = generatedBody(tok, reply, thinking, generated);
  if (!body) return;
  Entry e{keyOf(reply, thinking), std::move(*body)};
  if (e.bytes() > max_) return;
  std::lock_guard<std::mutex> lock(m_);
  if (auto it = index_.find(e.key); it != index_.end()) {
    bytes_ -= it->second->bytes();
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += e.bytes();
  lru_.push_front(std::move(e));
  index_[lru_.front().key] = lru_.begin();
  while (bytes_ > max_) {
    bytes_ -= lru_.back().bytes();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void ReplyIdMemory::recall(tok::ChatRequest& chat) const {
  std::lock_guard<std::mutex> lock(m_);
  if (index_.empty()) return;
  for (tok::ChatMessage& m : chat.messages) {
    if (m.role != "assistant") continue;
    auto it = index_.find(keyOf(m, chat.thinking));
    if (it == index_.end()) continue;
    m.bodyIds = it->second->ids;
    lru_.splice(lru_.begin(), lru_, it->second);
  }
}

size_t ReplyIdMemory::entries() const {
  std::lock_guard<std::mutex> lock(m_);
  return lru_.size();
}

uint64_t ReplyIdMemory::bytes() const {
  std::lock_guard<std::mutex> lock(m_);
  return bytes_;
}

}  // namespace k3::serve
