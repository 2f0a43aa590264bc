// What all four apps share (README "Errors and exit codes"): an error is one
// line "APP: <message>" on stderr, with --json also
// {"ok":false,"error":<that message>,"error_kind":<kind>} on stdout
// (k3-verify adds "sound":false); exit 2 for usage, 1 for other errors,
// k3-verify 2 for every error. Plus the kernels' ISA choice (--isa / K3_ISA)
// and k3-tokgen encode's positional TEXT.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "container_fixture.h"

namespace k3test {
using namespace k3test::container;
namespace {

struct ErrorJson {
  bool parsed = false, ok = true, hasSound = false, sound = true;
  std::string error, kind;
};

ErrorJson errorJson(const std::string& out) {
  ErrorJson e;
  simdjson::dom::parser p;
  simdjson::dom::element root;
  if (p.parse(out).get(root) != simdjson::SUCCESS) return e;
  std::string_view s;
  e.parsed = root["ok"].get_bool().get(e.ok) == simdjson::SUCCESS;
  if (root["error"].get_string().get(s) == simdjson::SUCCESS) e.error = std::string(s);
  if (root["error_kind"].get_string().get(s) == simdjson::SUCCESS) e.kind = std::string(s);
  e.hasSound = root["sound"].get_bool().get(e.sound) == simdjson::SUCCESS;
  return e;
}

// The stderr line is "APP: " + the JSON's error, and nothing else.
void expectOneError(const RunResult& r, const std::string& app, int exitCode, const std::string& kind) {
  EXPECT_EQ(r.exitCode, exitCode) << app << ": " << r.err;
  const ErrorJson e = errorJson(r.out);
  ASSERT_TRUE(e.parsed) << app << " stdout: " << r.out;
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.kind, kind) << r.out;
  EXPECT_EQ(r.err, app + ": " + e.error + "\n");
  EXPECT_EQ(e.hasSound, app == "k3-verify") << r.out;
  if (e.hasSound) {
    EXPECT_FALSE(e.sound);
  }
}

TEST(AppConventions, UsageErrorsAreOneLineExit2AndJson) {
  const std::string dst = tinyContainer(8);
  const std::string src = synthSnapshot("tiny", 1);
  expectOneError(runTool("k3-repack", {src, freshDir("conv-repack") + "/c", "--json", "--bogus"}), "k3-repack", 2, "usage");
  expectOneError(runTool("k3-verify", {dst, "--json", "--threads", "0"}), "k3-verify", 2, "usage");
  expectOneError(runTool("k3-run", {dst, "--json", "--ids", "1", "-p", "x"}), "k3-run", 2, "usage");
  expectOneError(runTool("k3-tokgen", {"encode", "--json", dst, "a", "b"}), "k3-tokgen", 2, "usage");
}

TEST(AppConventions, OtherErrorsAreExit1ExceptVerify) {
  const std::string gone = testTmp() + "/no/such/dir";
  expectOneError(runTool("k3-repack", {gone, freshDir("conv-repack2") + "/c", "--json"}), "k3-repack", 1, "missing");
  expectOneError(runTool("k3-run", {gone, "--json", "--ids", "1"}), "k3-run", 1, "missing");
  expectOneError(runTool("k3-tokgen", {"encode", "--json", gone + "/tiktoken.model", "--text", "x"}), "k3-tokgen", 1,
                 "missing");
  const RunResult v = runTool("k3-verify", {gone, "--json"});
  expectOneError(v, "k3-verify", 2, "io");
  EXPECT_NE(errorJson(v.out).error.find(gone), std::string::npos) << v.out;
}

TEST(AppConventions, WithoutJsonStdoutStaysEmpty) {
  const RunResult r = runTool("k3-run", {testTmp() + "/no/such/dir", "--ids", "1"});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("k3-run: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

std::string isaOf(const RunResult& r) {
  const size_t at = r.out.find("\"isa\":\"");
  if (at == std::string::npos) return "";
  return r.out.substr(at + 7, r.out.find('"', at + 7) - at - 7);
}

// --isa and K3_ISA lower the kernels' choice alike (the scalar path is on every
// CPU) and give the same logits; a name that is no ISA is a usage error.
TEST(AppConventions, IsaFlagAndEnvironmentChooseTheKernels) {
  const std::string dst = tinyContainer(8);
  const std::string dir = freshDir("conv-isa");
  const RunResult flag = runTool("k3-run", {dst, "--ids", "1,2,3", "--json", "--isa", "scalar", "--logits-out", dir + "/a.f32"});
  ASSERT_EQ(flag.exitCode, 0) << flag.err;
  EXPECT_EQ(isaOf(flag), "scalar");
  RunOptions env;
  env.env = {"K3_ISA=scalar"};
  const RunResult viaEnv = run({tool("k3-run"), dst, "--ids", "1,2,3", "--json", "--logits-out", dir + "/b.f32"}, env);
  ASSERT_EQ(viaEnv.exitCode, 0) << viaEnv.err;
  EXPECT_EQ(isaOf(viaEnv), "scalar");
  EXPECT_EQ(readFile(dir + "/a.f32"), readFile(dir + "/b.f32"));
  env.env = {"K3_ISA=avx2"};  // the flag wins over the environment
  EXPECT_EQ(isaOf(run({tool("k3-run"), dst, "--ids", "1", "--json", "--isa", "scalar"}, env)), "scalar");
  env.env = {"K3_ISA=sse9"};
  const RunResult bad = run({tool("k3-run"), dst, "--ids", "1", "--json"}, env);
  expectOneError(bad, "k3-run", 2, "usage");
  EXPECT_NE(bad.err.find("K3_ISA: 'sse9'"), std::string::npos) << bad.err;
  expectOneError(runTool("k3-repack", {synthSnapshot("tiny", 1), dir + "/c", "--json", "--isa", "sse9"}), "k3-repack",
                 2, "usage");
}

// What a newcomer types: the text as the second positional, as -t gives it.
TEST(AppConventions, TokgenEncodeTakesThePositionalText) {
  const std::string dst = tinyContainer(8);
  const RunResult positional = runTool("k3-tokgen", {"encode", dst, "hello world"});
  const RunResult flag = runTool("k3-tokgen", {"encode", dst, "-t", "hello world"});
  ASSERT_EQ(positional.exitCode, 0) << positional.err;
  ASSERT_EQ(flag.exitCode, 0) << flag.err;
  EXPECT_EQ(positional.out, flag.out);
  EXPECT_GT(positional.out.size(), 1u);
  // A tiktoken.model path takes its config second and the text third.
  const RunResult files =
      runTool("k3-tokgen", {"encode", dst + "/tiktoken.model", dst + "/tokenizer_config.json", "hello world"});
  ASSERT_EQ(files.exitCode, 0) << files.err;
  EXPECT_EQ(files.out, flag.out);
  const RunResult twice = runTool("k3-tokgen", {"encode", dst, "hello", "-t", "world"});
  EXPECT_EQ(twice.exitCode, 2);
  EXPECT_NE(twice.err.find("given twice"), std::string::npos) << twice.err;
}

}  // namespace
}  // namespace k3test
