// Chat: the ids the model is fed for a multi-turn conversation are exactly the
// tokenizer library's XTML builder output, the state is carried between turns,
// and generation stops at <|end_of_msg|>.
#include <fstream>

#include "k3/format/safetensors_file.h"
#include "k3/model/chat_session.h"
#include "k3/tok/chat_encoder.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

using k3::model::ChatOptions;
using k3::tok::ChatOutputEvent;
using k3::model::ChatSession;
using k3::tok::ChatMessage;

std::vector<int32_t> asInt(const std::vector<uint32_t>& v) { return {v.begin(), v.end()}; }

ChatMessage msg(const char* role, const std::string& text, const std::string& reasoning = "") {
  ChatMessage m;
  m.role = role;
  m.content = {text};
  m.reasoning = reasoning;
  return m;
}

// The prompt of a conversation as the chat encoder renders it, with the
// options ChatSession promises: thinking as given, effort max when thinking.
std::vector<int32_t> prompt(const k3::tok::Tokenizer& tok, const std::vector<ChatMessage>& messages, bool thinking) {
  k3::tok::ChatRequest req;
  req.messages = messages;
  req.thinking = thinking;
  req.effort = thinking ? k3::tok::ThinkingEffort::Max : k3::tok::ThinkingEffort::None;
  return asInt(k3::tok::renderChat(tok, req).ids);
}

ChatOptions chatOptions(bool thinking, const std::string& system) {
  ChatOptions o;
  o.thinking = thinking;
  o.system = system;
  return o;
}

k3::model::GenerateOptions greedy(size_t n) {
  k3::model::GenerateOptions g;
  g.maxTokens = n;
  return g;
}

TEST(ModelChat, MultiTurnIdsEqualTheChatBuilderOutput) {
  for (bool thinking : {false, true}) {
    const std::string dir = container("tiny", 8);
    auto w = k3::model::ModelWeights::open(dir);
    const auto tok = k3::tok::Tokenizer::fromDirectory(dir);
    k3::model::Session s(*w, {2, 8, 512, 0});
    k3::model::Sampler sampler({}, s.vocabSize());
    ChatSession chat(s, tok, chatOptions(thinking, "Be brief."));
    auto noop = [](const ChatOutputEvent&) {};

    const auto r1 = chat.turn("Hello there", sampler, greedy(6), noop);
    std::vector<ChatMessage> expect = {msg("system", "Be brief."), msg("user", "Hello there")};
    const auto want1 = prompt(tok, expect, thinking);
    EXPECT_EQ(chat.lastPrompt(), want1);
    // The state holds the prompt followed by the fed reply tokens.
    ASSERT_GE(s.history().size(), want1.size());
    EXPECT_TRUE(std::equal(want1.begin(), want1.end(), s.history().begin()));

    const auto r2 = chat.turn("And again, 你好", sampler, greedy(4), noop);
    expect.push_back(r1.message);  // the reply as parsed: reasoning, content, calls
    expect.push_back(msg("user", "And again, 你好"));
    const auto want2 = prompt(tok, expect, thinking);
    EXPECT_EQ(chat.lastPrompt(), want2);
    // Whatever was reused, the first reply token is what a fresh model fed the
    // whole second prompt predicts.
    k3::model::Session fresh(*w, {2, 8, 512, 0});
    fresh.feed(want2);
    EXPECT_EQ(r2.tokens.at(0), k3::model::Sampler::argmax(fresh.lastLogits(), fresh.vocabSize()));
  }
}

TEST(ModelChat, GenerationStopsAtEndOfMessage) {
  const std::string src = container("tiny", 16);
  const auto tok = k3::tok::Tokenizer::fromDirectory(src);
  const int32_t eom = static_cast<int32_t>(*tok.specialId("<|end_of_msg|>"));
  const auto firstPrompt = prompt(tok, {msg("user", "Hi")}, false);
  int32_t first;
  {
    auto w = k3::model::ModelWeights::open(src);
    k3::model::Session s(*w, {2, 8, 256, 0});
    s.feed(firstPrompt);
    first = k3::model::Sampler::argmax(s.lastLogits(), s.vocabSize());
    ASSERT_GT(s.lastLogits()[first], 0.0f);
    ASSERT_NE(first, eom);
  }
  const std::string dir = containerPredicting(src, first, eom, "chat-eom");
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {2, 8, 256, 0});
  k3::model::Sampler sampler({}, s.vocabSize());
  ChatSession chat(s, tok, chatOptions(false, ""));
  std::string shown;
  const auto r = chat.turn("Hi", sampler, greedy(20), [&](const ChatOutputEvent& e) { shown += e.text; });
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.tokens, std::vector<int32_t>{eom});
  EXPECT_EQ(shown, "");
  EXPECT_EQ(chat.lastPrompt(), firstPrompt);
  std::vector<int32_t> held = firstPrompt;
  held.push_back(eom);
  EXPECT_EQ(s.history(), held);  // the end of the turn stays in the state

  // The CLI: same prompt ids, stops at once.
  RunResult cli = runTool("k3-run", {dir, "--chat", "--no-think", "-p", "Hi", "-n", "20", "--json", "--temp", "0"});
  ASSERT_EQ(cli.exitCode, 0) << cli.err;
  EXPECT_NE(cli.out.find("\"prompt_ids\":[" + idsText(firstPrompt) + "]"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("\"tokens\":[" + std::to_string(eom) + "]"), std::string::npos) << cli.out;
  EXPECT_NE(cli.out.find("\"stopped\":true"), std::string::npos) << cli.out;
}

}  // namespace
}  // namespace k3test::model
