// Replies keep their ids: a reply generated with a tokenization the text
// would not re-encode to renders, in the next request's history, as exactly
// the ids the engine fed — so the checkpoint at the end of the reply is a
// prefix of the next prompt. The tiny container's tokenizer.
#include "k3/serve/reply_ids.h"

#include <gtest/gtest.h>

#include "k3/tok/chat_encoder.h"
#include "k3/tok/xtml_specials.h"
#include "model/model_fixtures.h"

namespace k3test::serve {
namespace {

using k3::tok::ChatMessage;
using k3::tok::ChatRequest;
using Ids = std::vector<uint32_t>;

const k3::tok::Tokenizer& tiny() {
  static const k3::tok::Tokenizer tok = k3::tok::Tokenizer::fromDirectory(k3test::model::container("tiny", 8));
  return tok;
}

Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A text and a split of it whose pieces encode to other ids than the whole.
struct Split {
  std::string whole;
  Ids pieces;
};
Split differentlyTokenized() {
  const auto& tok = tiny();
  for (const std::string text : {"\"path\": 1", "hello world", "the weather today", "function call"})
    for (size_t cut = 1; cut < text.size(); ++cut) {
      Ids pieces = cat({tok.encode(text.substr(0, cut)), tok.encode(text.substr(cut))});
      if (pieces != tok.encode(text)) return {text, pieces};
    }
  ADD_FAILURE() << "no text in the list tokenizes differently when split";
  return {};
}

ChatMessage msg(const char* role, std::string content, std::string reasoning = "") {
  ChatMessage m;
  m.role = role;
  m.content = {std::move(content)};
  m.reasoning = std::move(reasoning);
  return m;
}

std::vector<int32_t> signedIds(const Ids& ids) { return {ids.begin(), ids.end()}; }

TEST(ReplyIds, AReplyComesBackAsTheIdsItWasGeneratedAs) {
  const auto& tok = tiny();
  const auto sp = k3::tok::xtmlSpecials(tok, "test");
  const Split s = differentlyTokenized();
  for (bool thinking : {false, true}) {
    SCOPED_TRACE(thinking ? "thinking" : "no thinking");
    ChatRequest turn1;
    turn1.thinking = thinking;
    turn1.effort = k3::tok::ThinkingEffort::None;
    turn1.messages = {msg("user", "Hi")};
    const Ids prompt1 = k3::tok::renderChat(tok, turn1).ids;
    // What the model wrote (as fed: everything but the final <|end_of_msg|>).
    const Ids think = thinking ? cat({tok.encode("ok"), {sp.close}, tok.encode("think"), {sp.sep}, {sp.open},
                                      tok.encode("response"), {sp.sep}})
                               : Ids{};
    const Ids generated = cat({think, s.pieces, {sp.close}, tok.encode("response"), {sp.sep}, {sp.close},
                               tok.encode("message"), {sp.sep}});
    const ChatMessage reply = msg("assistant", s.whole, thinking ? "ok" : "");

    ChatRequest turn2 = turn1;
    turn2.messages = {msg("user", "Hi"), reply, msg("user", "More")};
    const Ids asText = k3::tok::renderChat(tok, turn2).ids;
    const Ids fed = cat({prompt1, generated});
    EXPECT_FALSE(std::equal(fed.begin(), fed.end(), asText.begin()));  // re-encoded: not a prefix (the bug)

    k3::serve::ReplyIdMemory memory(1 << 20);
    memory.remember(tok, reply, thinking, signedIds(generated));
    EXPECT_EQ(memory.entries(), 1u);
    ChatRequest recalled = turn2;
    memory.recall(recalled);
    const Ids withIds = k3::tok::renderChat(tok, recalled).ids;
    ASSERT_GE(withIds.size(), fed.size() + 1);
    EXPECT_TRUE(std::equal(fed.begin(), fed.end(), withIds.begin()));  // the whole previous turn is a prefix
    EXPECT_EQ(withIds[fed.size()], sp.endOfMsg);                       // then the unfed stop token
    // ... and the rest is the text rendering of what follows.
    EXPECT_TRUE(std::equal(withIds.end() - 8, withIds.end(), asText.end() - 8));

    // The other thinking mode renders the message differently: not recalled.
    ChatRequest other = turn2;
    other.thinking = !thinking;
    memory.recall(other);
    EXPECT_TRUE(other.messages[1].bodyIds.empty());
  }
}

TEST(ReplyIds, AReplyCutByTheLimitIsCompletedWithTheRenderedClosing) {
  const auto& tok = tiny();
  const auto sp = k3::tok::xtmlSpecials(tok, "test");
  const Split s = differentlyTokenized();
  const ChatMessage reply = msg("assistant", s.whole);
  const auto body = k3::serve::generatedBody(tok, reply, false, signedIds(s.pieces));
  ASSERT_TRUE(body.has_value());
  const Ids closing = cat({{sp.close}, tok.encode("response"), {sp.sep}, {sp.close}, tok.encode("message"), {sp.sep},
                           {sp.endOfMsg}});
  EXPECT_EQ(*body, cat({s.pieces, closing}));
}

TEST(ReplyIds, IdsThatDoNotSpellTheReplyAreNotRemembered) {
  const auto& tok = tiny();
  // A stop string cut "world" from the content: the ids say more than the text.
  const ChatMessage cut = msg("assistant", "hello ");
  EXPECT_FALSE(k3::serve::generatedBody(tok, cut, false, signedIds(tok.encode("hello world"))).has_value());
  // Different text altogether.
  EXPECT_FALSE(k3::serve::generatedBody(tok, cut, false, signedIds(tok.encode("bye"))).has_value());
  k3::serve::ReplyIdMemory memory(1 << 20);
  memory.remember(tok, cut, false, signedIds(tok.encode("hello world")));
  EXPECT_EQ(memory.entries(), 0u);
}

TEST(ReplyIds, TheMemoryIsBoundedByBytesOldestOut) {
  const auto& tok = tiny();
  k3::serve::ReplyIdMemory memory(600);
  for (int i = 0; i < 20; ++i) {
    const std::string text = "reply number " + std::to_string(i);
    memory.remember(tok, msg("assistant", text), false, signedIds(tok.encode(text)));
    EXPECT_LE(memory.bytes(), 600u);
  }
  EXPECT_GT(memory.entries(), 0u);
  EXPECT_LT(memory.entries(), 20u);
  ChatRequest newest, oldest;
  newest.messages = {msg("assistant", "reply number 19")};
  oldest.messages = {msg("assistant", "reply number 0")};
  newest.thinking = oldest.thinking = false;
  memory.recall(newest);
  memory.recall(oldest);
  EXPECT_FALSE(newest.messages[0].bodyIds.empty());
  EXPECT_TRUE(oldest.messages[0].bodyIds.empty());
}

}  // namespace
}  // namespace k3test::serve
