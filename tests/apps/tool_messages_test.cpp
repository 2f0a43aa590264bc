// What each tool says when it is used as a newcomer uses it (issue 29): the
// bytes of k3-repack's summary line, k3-verify's answer for a raw Hugging Face
// snapshot and its fast-mode note, k3-repack given a container, k3-tokgen
// encode given text where a path was expected. The counts are checked against
// k3-verify --json and the files on disk, not against k3-repack's own report.
#include <gtest/gtest.h>

#include "apps/container_fixture.h"
#include "support/text_shape.h"

namespace {

using namespace k3test;
using namespace k3test::container;

uint64_t jsonUint(const std::string& json, const char* section, const char* key) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  uint64_t v = 0;
  EXPECT_EQ(parser.parse(json).get(root), simdjson::SUCCESS) << json;
  EXPECT_EQ(root[section][key].get(v), simdjson::SUCCESS) << json;
  return v;
}

// Off a TTY a successful run prints one line on stdout; a rerun says all was done.
TEST(ToolMessages, RepackPrintsOneSummaryLine) {
  const std::string src = synthSnapshot("tiny", 1);
  const std::string dst = freshDir("msg-repack") + "/c";
  const RunResult r = runTool("k3-repack", {src, dst, "--bits", "8", "--threads", "2"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(r.err, "");  // stderr is not a TTY here: no bar
  // dst, shards, converted, tensors, bytes written
  const auto m = matchShape(r.out, "k3-repack: {*}: {n} shards ({n} converted, 0 already done), {n} tensors, "
                                   "{n} bytes written, {s} s\n");
  ASSERT_TRUE(m) << r.out;
  EXPECT_EQ((*m)[0], dst);
  EXPECT_EQ((*m)[1], (*m)[2]);
  // Independent counts: k3-verify's report and the shard files' sizes.
  const RunResult v = runTool("k3-verify", {dst, "--json"});
  ASSERT_EQ(v.exitCode, 0) << v.out;
  EXPECT_EQ(std::stoull((*m)[1]), jsonUint(v.out, "summary", "shards"));
  EXPECT_EQ(std::stoull((*m)[3]), jsonUint(v.out, "summary", "tensors"));
  uint64_t shardBytes = 0;
  for (const auto& e : fs::directory_iterator(dst))
    if (e.path().extension() == ".safetensors") shardBytes += e.file_size();
  EXPECT_EQ(std::stoull((*m)[4]), shardBytes);

  const RunResult again = runTool("k3-repack", {src, dst, "--bits", "8"});
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_TRUE(matchShape(again.out, "k3-repack: {*}: " + (*m)[1] + " shards (0 converted, " + (*m)[1] +
                                        " already done), " + (*m)[3] + " tensors, 0 bytes written, {s} s\n"))
      << again.out;
}

TEST(ToolMessages, RepackWithShardsSaysWhatIsLeft) {
  const RunResult r = runTool("k3-repack", {synthSnapshot("tiny", 1), freshDir("msg-half") + "/c", "--shards", "1-2"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("; not finalized yet (k3-repack SRC DST --finalize once every shard is done)\n"),
            std::string::npos)
      << r.out;
}

TEST(ToolMessages, VerifyOnARawSnapshotSaysSoInOneLine) {
  const std::string src = synthSnapshot("tiny", 1);
  const RunResult r = runTool("k3-verify", {src, "--full"});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "k3-verify: " + src +
                       ": a Hugging Face snapshot, not a k3kit container (no k3-manifest.json); convert it first: "
                       "k3-repack " + src + " DST --bits 8\n");
  // A container that lost its manifest is still a damaged container (problems, exit 1).
  const std::string damaged = freshDir("msg-nomanifest") + "/c";
  copyDir(tinyContainer(8), damaged);
  fs::remove(damaged + "/k3-manifest.json");
  const RunResult d = runTool("k3-verify", {damaged});
  EXPECT_EQ(d.exitCode, 1) << d.err;
  EXPECT_NE(d.out.find("[manifest]"), std::string::npos) << d.out;
}

TEST(ToolMessages, VerifyFastModeSaysWhatItDidNotHash) {
  const std::string dst = tinyContainer(8);
  const RunResult fast = runTool("k3-verify", {dst});
  ASSERT_EQ(fast.exitCode, 0) << fast.out;
  EXPECT_TRUE(matchShape(fast.out, "k3-verify: SOUND (fast: expert bytes not hashed; --full hashes them): {n} shards, "
                                   "{n} tensors, {n} experts, 0 bytes hashed, 0 problem(s), {s} s\n"))
      << fast.out;
  const RunResult full = runTool("k3-verify", {dst, "--full"});
  ASSERT_EQ(full.exitCode, 0) << full.out;
  EXPECT_EQ(full.out.rfind("k3-verify: SOUND (full): ", 0), 0u) << full.out;
}

TEST(ToolMessages, RepackGivenAContainerSaysItIsOne) {
  const std::string c = tinyContainer(8);
  const std::string dst = freshDir("msg-cont") + "/out";
  const RunResult r = runTool("k3-repack", {c, dst});
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "k3-repack: " + c +
                       ": a k3kit container already (it has k3-manifest.json), not a Hugging Face snapshot: k3-verify "
                       "and k3-run read it as it is\n");
  EXPECT_FALSE(fs::exists(dst));
}

// `encode tiktoken.model hello` reads "hello" as the TOKENIZER_CONFIG: the
// error says how to give text.
TEST(ToolMessages, TokgenEncodeSuggestsTextFlagOrStdin) {
  const std::string c = tinyContainer(8);
  const std::string model = c + "/tiktoken.model";
  const RunResult second = runTool("k3-tokgen", {"encode", model, "hello"});
  EXPECT_EQ(second.exitCode, 1);
  EXPECT_EQ(second.out, "");
  EXPECT_EQ(second.err,
            "k3-tokgen: encode: hello: no such file (after a TIKTOKEN_MODEL comes its TOKENIZER_CONFIG); to encode it "
            "as text, use -t TEXT or stdin\n");
  const RunResult first = runTool("k3-tokgen", {"encode", "hello world"});
  EXPECT_EQ(first.exitCode, 1);
  EXPECT_EQ(first.err,
            "k3-tokgen: encode: hello world: no such file or directory (SOURCE: a snapshot directory or "
            "TIKTOKEN_MODEL); to encode text, give SOURCE first, then the text, -t TEXT or stdin\n");
  // With the text given by -t the missing path was meant as a path: no suggestion.
  const RunResult flag = runTool("k3-tokgen", {"encode", model, c + "/nope.json", "-t", "hi"});
  EXPECT_EQ(flag.exitCode, 1);
  EXPECT_EQ(flag.err, "k3-tokgen: encode: " + c +
                          "/nope.json: no such file (after a TIKTOKEN_MODEL comes its TOKENIZER_CONFIG)\n");
  // The three-argument form still encodes.
  const RunResult ok = runTool("k3-tokgen", {"encode", model, c + "/tokenizer_config.json", "hello"});
  EXPECT_EQ(ok.exitCode, 0) << ok.err;
}

}  // namespace
