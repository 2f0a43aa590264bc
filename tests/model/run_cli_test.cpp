// k3-run's output and behaviour as a user sees them (issue 29): the stats
// after the flushed text, raw generation ending at BOS/EOS without special
// names, --chat with declared (and undeclared) tool calls and --json's
// message, the interactive session at a full context, drawn seeds and the
// shared sampling defaults, the caps said in one line, hostile values.
// Each runs the built k3-run and asserts its bytes and exit codes.
#include <fstream>

#include "k3/format/safetensors_file.h"
#include "k3/model/sampler.h"
#include "k3/tok/tokenizer.h"
#include "model_fixtures.h"

namespace k3test::model {
namespace {

// k3-run through sh with stderr joined to stdout (2>&1), as a terminal
// user or the demo's log sees it.
RunResult runJoined(const std::vector<std::string>& args, const std::string& stdinPath = "") {
  std::string cmd = "'";
  cmd += binDir();
  cmd += "/k3-run'";
  for (const auto& a : args) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += " " + q + "'";
  }
  cmd += " 2>&1";
  RunOptions o;
  o.stdinPath = stdinPath;
  return run({"/bin/sh", "-c", cmd}, o);
}

// "[id" + tail, built without the temporaries GCC 12's -Wrestrict misreads.
std::string idList(int32_t id, const char* tail) {
  std::string s = "[";
  s += std::to_string(id);
  s += tail;
  return s;
}

// The value of "key": in a one-line JSON object (up to the next ',' or '}'
// outside brackets), as text.
std::string field(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "<none>";
  size_t b = at + key.size() + 3, e = b;
  int depth = 0;
  bool str = false;
  for (; e < json.size(); ++e) {
    const char c = json[e];
    if (str) {
      if (c == '\\') ++e;
      else if (c == '"') str = false;
      continue;
    }
    if (c == '"') str = true;
    else if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && depth > 0) --depth;
    else if ((c == ',' || c == '}') && depth == 0) break;
  }
  return json.substr(b, e - b);
}

// The first token the model predicts after `prompt`.
int32_t firstPrediction(const std::string& dir, const std::vector<int32_t>& prompt) {
  auto w = k3::model::ModelWeights::open(dir);
  k3::model::Session s(*w, {1, 8, 256, 0});
  s.feed(prompt);
  const int32_t first = k3::model::Sampler::argmax(s.lastLogits(), s.vocabSize());
  EXPECT_GT(s.lastLogits()[first], 0.0f);
  return first;
}

// -p's prompt as k3-run builds it: the config's BOS, then the text.
std::vector<int32_t> rawPrompt(const std::string& dir, const std::string& text) {
  const auto tok = k3::tok::Tokenizer::fromDirectory(dir);
  auto w = k3::model::ModelWeights::open(dir);
  std::vector<int32_t> ids = {static_cast<int32_t>(*w->config().bosTokenId)};
  for (uint32_t id : tok.encode(text, false)) ids.push_back(static_cast<int32_t>(id));
  return ids;
}

std::string k3MiniContainer() {
  const std::string src = sourceDir() + "/models/k3-mini";
  return cachedDir(testTmp() + "/model-containers/k3-mini-b8", [&](const std::string& out) {
    RunResult r = runTool("k3-repack", {src, out, "--bits", "8"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
  });
}

// 1. The text, then a newline, then the stats: with 2>&1 every stats line
// starts a line of its own (the demo's k3-run -p is this command).
TEST(RunCli, StatsFollowTheFlushedTextOnTheirOwnLines) {
  const std::string dir = container("tiny", 8);
  for (const std::vector<std::string>& mode :
       {std::vector<std::string>{"-p", "hello there", "-n", "6"},
        std::vector<std::string>{"--chat", "--no-think", "-p", "Hi", "-n", "6"}}) {
    std::vector<std::string> args = {dir, "--temp", "0"};
    args.insert(args.end(), mode.begin(), mode.end());
    const RunResult r = runJoined(args);
    ASSERT_EQ(r.exitCode, 0) << r.out;
    const RunResult apart = runTool("k3-run", args);
    // All of stdout comes first, then stderr's lines (warnings, stats), each
    // starting a line of its own.
    ASSERT_FALSE(apart.out.empty());
    EXPECT_EQ(apart.out.back(), '\n');
    ASSERT_EQ(r.out.substr(0, apart.out.size()), apart.out) << mode[0];
    const std::string rest = r.out.substr(apart.out.size());
    EXPECT_TRUE(rest.rfind("[k3-run] prefill", 0) == 0 || rest.rfind("k3-run: warning: ", 0) == 0) << rest;
    EXPECT_NE(rest.find("[k3-run] prefill"), std::string::npos) << rest;
    for (const char* mark : {"[k3-run]", "k3-run: "})
      for (size_t at = 0; (at = rest.find(mark, at)) != std::string::npos; at += 1)
        EXPECT_TRUE(at == 0 || rest[at - 1] == '\n') << rest;
  }
}

// 2. Raw generation: BOS ends the document (nothing printed), and a special
// token that is not an end (here <|open|>) is not printed by name.
TEST(RunCli, RawGenerationStopsAtBosAndPrintsNoSpecialNames) {
  const std::string src = container("tiny", 16);  // lm_head kept in BF16
  const auto tok = k3::tok::Tokenizer::fromDirectory(src);
  const auto prompt = rawPrompt(src, "hello there");
  const int32_t first = firstPrediction(src, prompt);
  const int32_t bos = prompt[0];
  ASSERT_NE(first, bos);

  const std::string endsAtBos = containerPredicting(src, first, bos, "run-bos");
  RunResult j = runTool("k3-run", {endsAtBos, "-p", "hello there", "-n", "8", "--temp", "0", "--json"});
  ASSERT_EQ(j.exitCode, 0) << j.err;
  EXPECT_EQ(field(j.out, "tokens"), idList(bos, "]")) << j.out;
  EXPECT_EQ(field(j.out, "stopped"), "true");
  EXPECT_EQ(field(j.out, "text"), "\"\"");
  RunResult t = runTool("k3-run", {endsAtBos, "-p", "hello there", "-n", "8", "--temp", "0"});
  ASSERT_EQ(t.exitCode, 0) << t.err;
  EXPECT_EQ(t.out, "\n");

  const int32_t open = static_cast<int32_t>(*tok.specialId("<|open|>"));
  const std::string opens = containerPredicting(src, first, open, "run-open");
  RunResult o = runTool("k3-run", {opens, "-p", "hello there", "-n", "5", "--temp", "0", "--json"});
  ASSERT_EQ(o.exitCode, 0) << o.err;
  const std::string tokens = field(o.out, "tokens");
  ASSERT_EQ(tokens.rfind(idList(open, ","), 0), 0u) << o.out;
  // "text" holds the ordinary tokens' bytes only.
  std::vector<uint32_t> plain;
  for (size_t i = 1, e; i < tokens.size(); i = e + 1) {
    e = tokens.find_first_of(",]", i);
    const uint32_t id = static_cast<uint32_t>(std::stoul(tokens.substr(i, e - i)));
    if (!tok.isSpecial(id)) plain.push_back(id);
  }
  RunResult shown = runTool("k3-run", {opens, "-p", "hello there", "-n", "5", "--temp", "0"});
  ASSERT_EQ(shown.exitCode, 0) << shown.err;
  EXPECT_EQ(shown.out, tok.decode(plain) + "\n");
  EXPECT_EQ(shown.out.find("<|open|>"), std::string::npos);
}

const char* kWeatherTools = R"({"messages": [], "tools": [
  {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city.",
   "parameters": {"type": "object", "required": ["city"], "properties": {
     "city": {"type": "string", "description": "City name"},
     "days": {"type": "integer", "description": "Forecast length in days"}}}}},
  {"type": "function", "function": {"name": "lookup", "description": "Look a word up in the dictionary.",
   "parameters": {"type": "object", "required": ["word"], "properties": {
     "word": {"type": "string", "description": "The word"}}}}}]})";

// 3. --chat --tools: k3-mini (trained to call get_weather) makes the call;
// k3-run shows its name and arguments, and --json carries the parsed
// message. The same call with no tools declared is shown as undeclared.
TEST(RunCli, ChatShowsToolCallsDeclaredOrNot) {
  const std::string dir = k3MiniContainer();
  const std::string req = freshDir("run-tools") + "/tools.json";
  writeFile(req, kWeatherTools);
  const std::vector<std::string> ask = {dir, "--chat", "-p", "What's the weather in Paris?", "-n", "120", "--temp", "0"};

  std::vector<std::string> args = ask;
  args.insert(args.end(), {"--tools", req});
  RunResult r = runTool("k3-run", args);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("[tool call]\ncall_1 get_weather {\"city\": \"Paris\"}\n"), std::string::npos) << r.out;

  args.push_back("--json");
  RunResult j = runTool("k3-run", args);
  ASSERT_EQ(j.exitCode, 0) << j.err;
  EXPECT_EQ(field(j.out, "finish_reason"), "\"tool_calls\"") << j.out;
  const std::string message = field(j.out, "message");
  EXPECT_NE(message.find("\"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\", \"function\": {\"name\": "
                         "\"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\"reasoning_content\": \""), std::string::npos) << message;

  RunResult bare = runTool("k3-run", ask);
  ASSERT_EQ(bare.exitCode, 0) << bare.err;
  if (bare.out.find("<|") != std::string::npos) ADD_FAILURE() << bare.out;
  // Whatever the model does without tools, a call is never dropped silently.
  const bool called = bare.out.find("get_weather") != std::string::npos;
  EXPECT_TRUE(called) << "k3-mini no longer calls without tools: " << bare.out;  // today it does
  EXPECT_NE(bare.out.find("[undeclared tool call]\n\"get_weather\" (token "), std::string::npos) << bare.out;

  writeFile(req, R"({"messages": []})");
  RunResult none = runTool("k3-run", args);
  EXPECT_EQ(none.exitCode, 1) << none.err;
  EXPECT_EQ(none.err, "k3-run: " + req + ": declares no tools (expected an OpenAI request with \"tools\")\n");
  EXPECT_EQ(runTool("k3-run", {dir, "-p", "x", "--tools", req}).exitCode, 2);
}

// 4. Interactive chat at a small --ctx: turns are dropped with a warning, a
// cut answer says so, a message that cannot fit is refused, /reset starts
// over, and the session ends with exit 0 at /exit.
TEST(RunCli, InteractiveChatKeepsGoingAtAFullContext) {
  const std::string dir = container("tiny", 8);
  const std::string in = freshDir("run-interactive") + "/in.txt";
  std::string lines;
  for (int i = 0; i < 6; ++i) lines += "Tell me more, number " + std::to_string(i) + "\n";
  std::string huge;
  for (int i = 0; i < 100; ++i) huge += "word" + std::to_string(i) + " ";
  lines += huge + "\n/reset\nHi again\n/exit\nnever read\n";
  writeFile(in, lines);
  RunOptions o;
  o.stdinPath = in;
  RunResult r = run({binDir() + "/k3-run", dir, "--chat", "--no-think", "--ctx", "128", "-n", "40", "--temp", "0"}, o);
  EXPECT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("k3-run: warning: the context is full: dropped the "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("k3-run: warning: the context is nearly full ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more than --ctx 128 holds; not sent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[k3-run] prefill"), std::string::npos) << r.err;  // ended normally, stats printed
  // Ten lines read (six, the refused one, /reset, one after it, /exit); not the line after /exit.
  size_t prompts = 0;
  for (size_t at = 0; (at = r.err.find("> ", at)) != std::string::npos; at += 2) ++prompts;
  EXPECT_EQ(prompts, 10u) << r.err;  // a prompt before each line up to /exit

  // One turn whose answer cannot fit: said on stderr and in --json.
  RunResult cut = runTool("k3-run", {dir, "--chat", "--no-think", "-p", "Hi", "--ctx", "70", "-n", "100", "--temp", "0",
                                     "--json"});
  ASSERT_EQ(cut.exitCode, 0) << cut.err;
  if (field(cut.out, "stopped") == "false") {
    EXPECT_EQ(field(cut.out, "cut_by_context"), "true") << cut.out;
    // "length", or "" with "malformed" set (the random tiny model writes specials anywhere).
    EXPECT_TRUE(field(cut.out, "finish_reason") == "\"length\"" || field(cut.out, "malformed") != "<none>") << cut.out;
    EXPECT_NE(cut.err.find("k3-run: warning: the answer was cut: the context is full (--ctx 70)\n"), std::string::npos)
        << cut.err;
  }
  RunResult alone = runTool("k3-run", {dir, "--chat", "-p", huge, "--ctx", "40", "--temp", "0"});
  EXPECT_EQ(alone.exitCode, 2);
  EXPECT_NE(alone.err.find("k3-run: -p: the message makes a prompt of "), std::string::npos) << alone.err;
}

// 5. Sampling: a sampled run without --seed draws one and reports it; the
// reported seed repeats the run; the defaults come from the container's
// generation_config.json (else T = 1, top_p = 1).
TEST(RunCli, SampledRunsDrawAndReportTheirSeed) {
  const std::string src = container("tiny", 8);
  auto runJson = [&](const std::string& dir, std::vector<std::string> extra) {
    std::vector<std::string> args = {dir, "-p", "hello there", "-n", "12", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = runTool("k3-run", args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return r.out;
  };
  const std::string a = runJson(src, {"--temp", "1.2"}), b = runJson(src, {"--temp", "1.2"});
  EXPECT_EQ(field(a, "seed_drawn"), "true");
  EXPECT_NE(field(a, "seed"), field(b, "seed"));
  const std::string again = runJson(src, {"--temp", "1.2", "--seed", field(a, "seed")});
  EXPECT_EQ(field(again, "tokens"), field(a, "tokens"));
  EXPECT_EQ(field(again, "seed_drawn"), "false");
  const std::string greedy = runJson(src, {"--temp", "0"});
  EXPECT_EQ(field(greedy, "seed"), "0");
  EXPECT_EQ(field(greedy, "seed_drawn"), "false");

  // The synthetic container's generation_config.json: temperature 1, top_p 1.
  const std::string dflt = runJson(src, {});
  EXPECT_EQ(field(dflt, "temperature"), "1");
  EXPECT_EQ(field(dflt, "top_p"), "1");
  EXPECT_EQ(field(dflt, "sampling_defaults"), "\"generation_config.json\"");
  EXPECT_EQ(field(dflt, "seed_drawn"), "true");

  // Containers repacked from a snapshot with another generation_config.json
  // (k3-repack copies it; the container gate checks it against the manifest).
  auto withConfig = [&](const std::string& json) {
    const std::string work = freshDir("run-gencfg");
    fs::copy(synthSnapshot("tiny", 1), work + "/src", fs::copy_options::recursive);
    if (json.empty()) fs::remove(work + "/src/generation_config.json");
    else writeFile(work + "/src/generation_config.json", json);
    RunResult r = runTool("k3-repack", {work + "/src", work + "/c", "--bits", "8"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return work + "/c";
  };
  const std::string own = runJson(withConfig(R"({"temperature": 0.7, "top_k": 5, "eos_token_id": 3})"), {"--top-k", "9"});
  EXPECT_EQ(field(own, "temperature"), "0.7");
  EXPECT_EQ(field(own, "top_k"), "9");  // a flag beats the file
  EXPECT_EQ(field(runJson(withConfig(R"({"temperature": 0.7, "do_sample": false})"), {}), "temperature"),
            "0");  // HF: do_sample false is greedy
  const std::string builtIn = runJson(withConfig(""), {});
  EXPECT_EQ(field(builtIn, "temperature"), "1");
  EXPECT_EQ(field(builtIn, "sampling_defaults"), "\"built-in\"");
  const std::string hot = withConfig(R"({"temperature": "hot"})");
  RunResult bad = runTool("k3-run", {hot, "-p", "x"});
  EXPECT_EQ(bad.exitCode, 1);
  EXPECT_EQ(bad.err, "k3-run: " + hot + "/generation_config.json: temperature must be a number\n");
}

// 6. Caps said in one stderr line: -n above the context's room; a prompt
// longer than --ctx is refused at start.
TEST(RunCli, CapsAreSaid) {
  const std::string dir = container("tiny", 8);
  const auto prompt = rawPrompt(dir, "hello there");
  RunResult r = runTool("k3-run", {dir, "-p", "hello there", "-n", "1000", "--ctx", "32", "--temp", "0", "--json"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const size_t room = 32 - prompt.size() + 1;
  EXPECT_EQ(r.err.substr(0, r.err.find('\n') + 1),
            "k3-run: warning: -n 1000 is more than the context holds: at most " + std::to_string(room) +
                " tokens (--ctx 32, " + std::to_string(prompt.size()) + " taken by the prompt)\n");
  if (field(r.out, "stopped") == "false") {
    EXPECT_EQ(field(r.out, "cut_by_context"), "true");
  }
  RunResult fits = runTool("k3-run", {dir, "-p", "hello there", "-n", "4", "--ctx", "32", "--temp", "0"});
  EXPECT_EQ(fits.err.find("warning"), std::string::npos) << fits.err;

  RunResult longer = runTool("k3-run", {dir, "-p", "hello there", "--ctx", "2"});
  EXPECT_EQ(longer.exitCode, 2);
  EXPECT_EQ(longer.err, "k3-run: -p: the prompt is " + std::to_string(prompt.size()) + " tokens, more than --ctx 2\n");
  EXPECT_EQ(longer.out, "");
}

// 7. Hostile values: --perplexity on an empty file, --seed -1.
TEST(RunCli, EmptyPerplexityAndNegativeSeedAreRefused) {
  const std::string dir = container("tiny", 8);
  const std::string empty = freshDir("run-empty") + "/empty.txt";
  writeFile(empty, "");
  RunResult p = runTool("k3-run", {dir, "--perplexity", empty});
  EXPECT_EQ(p.exitCode, 1);
  EXPECT_EQ(p.err, "k3-run: " + empty + ": no text: nothing to score (perplexity needs at least one predicted token)\n");
  EXPECT_EQ(p.out, "");
  RunResult s = runTool("k3-run", {dir, "-p", "hi", "--temp", "1", "--seed", "-1"});
  EXPECT_EQ(s.exitCode, 2);
  EXPECT_EQ(s.err.find('\n'), s.err.size() - 1) << s.err;
  EXPECT_NE(s.err.find("--seed"), std::string::npos) << s.err;
  EXPECT_NE(s.err.find("negative"), std::string::npos) << s.err;
  RunResult big = runTool("k3-run", {dir, "-p", "hi", "-n", "2", "--temp", "1", "--seed", "18446744073709551615", "--json"});
  EXPECT_EQ(big.exitCode, 0) << big.err;
  EXPECT_EQ(field(big.out, "seed"), "18446744073709551615");
}

}  // namespace
}  // namespace k3test::model
