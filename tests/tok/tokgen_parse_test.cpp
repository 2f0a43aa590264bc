// `k3-tokgen parse`: generated ids (a list or a file) -> the assistant message
// as OpenAI JSON, with calls checked against a request's tools; malformed
// output is one line on stderr and exit 1.
#include <gtest/gtest.h>

#include <string>

#include "k3/tok/id_text.h"
#include "tok/chat_output_test_util.h"

namespace {

std::vector<std::string> kimiSource() {
  return {k3test::kimiDataDir() + "/tiktoken.model", k3test::kimiDataDir() + "/k3_added_tokens.reconstructed.json"};
}

std::vector<uint32_t> weatherCall(bool thinking) {
  k3test::XtmlIds b(k3test::kimiTokenizer());
  if (thinking) b.text("Let me check.").close("think").open("response");
  b.close("response").open("tools").open("call", {{"tool", "get_weather"}, {"index", "1"}});
  b.open("argument", {{"key", "city"}, {"type", "string"}}).text("Zürich").close("argument").close("call");
  b.close("tools").end();
  return b.ids;
}

std::string commaList(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

std::string writeRequest() {
  const std::string dir = k3test::freshDir("tokgen_parse");
  const std::string path = dir + "/request.json";
  k3test::writeFile(path,
                    R"({"messages": [{"role": "user", "content": "weather?"}], "tools": [{"type": "function", "function": )"
                    R"({"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})");
  return path;
}

TEST(TokgenParse, PrintsTheOpenAiChoice) {
  std::vector<std::string> args = {"parse"};
  for (auto& s : kimiSource()) args.push_back(s);
  args.push_back(commaList(weatherCall(true)));
  args.insert(args.end(), {"--tools", writeRequest(), "--json"});
  k3test::RunResult r = k3test::runTool("k3-tokgen", args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"index\": 0, \"message\": {\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"Let me check.\", "
            "\"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
            "\"arguments\": \"{\\\"city\\\": \\\"Zürich\\\"}\"}}]}, \"finish_reason\": \"tool_calls\"}\n");
}

// Schema mismatches round-trip: a value whose type differs from the declared
// string comes back as the model wrote it (value and JSON type), not as an error.
TEST(TokgenParse, MistypedArgumentsComeBackAsWritten) {
  const struct {
    const char* type;
    const char* value;
  } cases[] = {{"number", "7"}, {"number", "-2.5e3"}, {"array", "[\"Paris\", 2]"}, {"object", "{\"name\": \"Zürich\"}"},
               {"boolean", "false"}, {"null", "null"}};
  for (const auto& c : cases) {
    k3test::XtmlIds b(k3test::kimiTokenizer());
    b.text("ok").close("think").open("response").close("response").open("tools");
    b.open("call", {{"tool", "get_weather"}, {"index", "1"}});
    b.open("argument", {{"key", "city"}, {"type", c.type}}).text(c.value).close("argument").close("call");
    b.close("tools").end();
    std::vector<std::string> args = {"parse"};
    for (auto& s : kimiSource()) args.push_back(s);
    args.push_back(commaList(b.ids));
    args.insert(args.end(), {"--tools", writeRequest()});
    k3test::RunResult r = k3test::runTool("k3-tokgen", args);
    ASSERT_EQ(r.exitCode, 0) << c.type << ": " << r.err;
    EXPECT_EQ(r.out, std::string("reasoning: \"ok\"\ncontent: \"\"\ntool_call call_1 get_weather {\"city\": ") + c.value +
                         "}\nfinish_reason: tool_calls\n")
        << c.type;
  }
}

TEST(TokgenParse, ReadsIdsFromAFileWithoutThinking) {
  const std::string file = k3test::freshDir("tokgen_parse_file") + "/ids.txt";
  k3test::writeFile(file, k3::tok::formatIds(weatherCall(false), false) + "\n");
  std::vector<std::string> args = {"parse"};
  for (auto& s : kimiSource()) args.push_back(s);
  args.insert(args.end(), {file, "--no-thinking", "--tools", writeRequest()});
  k3test::RunResult r = k3test::runTool("k3-tokgen", args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.out, "reasoning: \"\"\ncontent: \"\"\ntool_call call_1 get_weather {\"city\": \"Zürich\"}\nfinish_reason: tool_calls\n");
}

TEST(TokgenParse, MalformedOutputIsOneLineAndExitOne) {
  std::vector<std::string> args = {"parse"};
  for (auto& s : kimiSource()) args.push_back(s);
  args.push_back(commaList(weatherCall(true)));  // no --tools: the call names an undeclared tool
  k3test::RunResult r = k3test::runTool("k3-tokgen", args);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find("k3-tokgen: malformed model output: token "), 0u) << r.err;
  EXPECT_NE(r.err.find("found tool=\"get_weather\""), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

}  // namespace
