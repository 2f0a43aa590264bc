// Hostile and careless input (issue 23), table-driven over the four tools:
// special files (FIFOs, /dev/zero symlinks, directories) where files are
// expected, sizes past the caps (sparse), paths out of the container, absurd
// values, tensors and tokenizer files k3-verify would reject, outputs over
// inputs. Each case (prepared by hostile_setup.py on copies of the tiny
// snapshot and its container) expects a specific exit code and message, a
// one-line error, no crash, no hang (killed after a timeout), a bounded peak
// RSS, and the inputs unchanged (fingerprints before/after).
#include <gtest/gtest.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "apps/container_fixture.h"

namespace {

using namespace k3test::container;
namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr long kMaxRssKb = 3L << 20;  // ASan shadow and quarantine
#else
constexpr long kMaxRssKb = 1L << 20;  // 1 GiB: /dev/zero or a 1.1 GB file read whole would pass it
#endif
constexpr int kTimeoutMs = 30000;  // a blocked FIFO open or read never returns

struct Case {
  const char* name;   // also the hostile_setup.py case
  const char* setup;
  const char* tool;
  std::vector<std::string> args;  // {SRC} {C} {OUT} {ROOT} are substituted
  int exitCode;
  const char* expect;  // substring of the error / problem line ("" = any)
};

// Regular files under `dir` (not following symlinks): size, mtime and, below
// 64 MB, the bytes. Sparse giants are compared by size and mtime only.
std::map<std::string, std::string> fingerprint(const std::string& dir) {
  std::map<std::string, std::string> out;
  if (!fs::exists(dir)) return out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const auto st = it->symlink_status();
    const std::string rel = fs::relative(it->path(), dir).string();
    if (fs::is_symlink(st)) {
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
      continue;
    }
    if (!fs::is_regular_file(st)) {
      out[rel] = fs::is_directory(st) ? "dir" : "special";
      continue;
    }
    const uint64_t size = fs::file_size(it->path());
    std::string fp = std::to_string(size) + ":" +
                     std::to_string(fs::last_write_time(it->path()).time_since_epoch().count());
    if (size < (64u << 20)) fp += ":" + k3test::readFile(it->path().string());
    out[rel] = std::move(fp);
  }
  return out;
}

std::string substitute(std::string s, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars)
    for (size_t at; (at = s.find(k)) != std::string::npos;) s.replace(at, k.size(), v);
  return s;
}

struct Prepared {
  std::string root, src, c, out;
};

Prepared prepare(const std::string& name, const std::string& setup) {
  Prepared p;
  p.root = k3test::freshDir("hostile-" + name);
  p.src = p.root + "/src";
  p.c = p.root + "/c";
  p.out = p.root + "/out";
  copyDir(k3test::synthSnapshot("tiny", 1), p.src);
  copyDir(tinyContainer(4), p.c);
  k3test::RunResult s = k3test::run(
      {"/usr/bin/python3", k3test::sourceDir() + "/tests/apps/hostile_setup.py", setup, p.root});
  if (s.exitCode != 0) ADD_FAILURE() << "setup " << setup << ": " << s.err;
  return p;
}

k3test::RunResult runCase(const Case& c, const Prepared& p) {
  const std::map<std::string, std::string> vars{{"{SRC}", p.src}, {"{C}", p.c}, {"{OUT}", p.out}, {"{ROOT}", p.root}};
  std::vector<std::string> argv{tool(c.tool)};
  for (const auto& a : c.args) argv.push_back(substitute(a, vars));
  k3test::RunOptions opts;
  opts.timeoutMs = kTimeoutMs;
  opts.stdinPath = "/dev/null";
  return k3test::run(argv, opts);
}

class Hostile : public ::testing::TestWithParam<Case> {};

TEST_P(Hostile, CleanOneLineErrorNoHangNoCrashBoundedInputsUnchanged) {
  const Case& c = GetParam();
  const Prepared p = prepare(c.name, c.setup);
  const auto srcBefore = fingerprint(p.src), cBefore = fingerprint(p.c);
  const k3test::RunResult r = runCase(c, p);
  ASSERT_FALSE(r.timedOut) << c.tool << " hung (killed after " << kTimeoutMs << " ms)";
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.err;
  EXPECT_EQ(r.exitCode, c.exitCode) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_LT(r.maxRssKb, kMaxRssKb) << "peak RSS";
  const bool verifyVerdict = std::string(c.tool) == "k3-verify" && c.exitCode == 1;
  if (c.exitCode != 0 && !verifyVerdict) {  // an error: exactly one line on stderr
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << r.err;
  }
  if (verifyVerdict) {  // problems, one line each, on stdout
    EXPECT_TRUE(r.err.empty()) << r.err;
    bool found = false;
    size_t pos = 0;
    for (size_t nl; (nl = r.out.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const std::string line = r.out.substr(pos, nl - pos);
      found = found || (line.rfind("[", 0) == 0 && line.find(c.expect) != std::string::npos);
    }
    EXPECT_TRUE(found) << "expected a problem line with '" << c.expect << "' in:\n" << r.out;
  }
  EXPECT_TRUE(fingerprint(p.src) == srcBefore) << "the source changed";
  EXPECT_TRUE(fingerprint(p.c) == cBefore) << "the container changed";
  if (std::string(c.tool) == "k3-repack" && c.exitCode != 0 && fs::exists(p.out)) {
    EXPECT_FALSE(fs::exists(p.out + "/k3-manifest.json")) << "published after an error";
    EXPECT_FALSE(fs::exists(p.out + "/.k3-repack.lock")) << "lock left behind";
    for (const auto& e : fs::recursive_directory_iterator(p.out))
      EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  }
  fs::remove_all(p.root);
}

const std::vector<std::string> kRepack{"{SRC}", "{OUT}", "--bits", "4", "--threads", "2"};
const std::vector<std::string> kVerify{"{C}"};
const std::vector<std::string> kVerifyFull{"{C}", "--full", "--threads", "2"};
const std::vector<std::string> kVerifySource{"{C}", "--full", "--source", "{SRC}", "--threads", "2"};

std::vector<Case> repackCases() {
  return {
      // special files and hostile sizes in the source
      {"src_config_fifo", "src_config_fifo", "k3-repack", kRepack, 1, "config is a FIFO, not a regular file"},
      {"src_config_devzero", "src_config_devzero", "k3-repack", kRepack, 1, "config is a character device"},
      {"src_config_dir", "src_config_dir", "k3-repack", kRepack, 1, "config is a directory"},
      {"src_config_huge", "src_config_huge", "k3-repack", kRepack, 1, "more than the limit"},
      {"src_index_fifo", "src_index_fifo", "k3-repack", kRepack, 1, "index is a FIFO"},
      {"src_index_devzero", "src_index_devzero", "k3-repack", kRepack, 1, "index is a character device"},
      {"src_index_dir", "src_index_dir", "k3-repack", kRepack, 1, "index is a directory"},
      {"src_index_huge", "src_index_huge", "k3-repack", kRepack, 1, "more than the limit"},
      {"src_shard_fifo", "src_shard_fifo", "k3-repack", kRepack, 1, "shard is a FIFO"},
      {"src_shard_devzero", "src_shard_devzero", "k3-repack", kRepack, 1, "shard is a character device"},
      {"src_shard_dir", "src_shard_dir", "k3-repack", kRepack, 1, "shard is a directory"},
      {"src_tiktoken_fifo", "src_tiktoken_fifo", "k3-repack", kRepack, 1, "tokenizer model is a FIFO"},
      {"src_tiktoken_devzero", "src_tiktoken_devzero", "k3-repack", kRepack, 1, "tokenizer model is a character device"},
      {"src_tiktoken_dir", "src_tiktoken_dir", "k3-repack", kRepack, 1, "tokenizer model is a directory"},
      {"src_tiktoken_huge", "src_tiktoken_huge", "k3-repack", kRepack, 1, "more than the limit"},
      {"src_tokcfg_fifo", "src_tokcfg_fifo", "k3-repack", kRepack, 1, "tokenizer config is a FIFO"},
      {"src_tokcfg_devzero", "src_tokcfg_devzero", "k3-repack", kRepack, 1, "tokenizer config is a character device"},
      {"src_gencfg_fifo", "src_gencfg_fifo", "k3-repack", kRepack, 1, "config is a FIFO"},
      // paths in the index
      {"src_index_shard_dotdot", "src_index_shard_dotdot", "k3-repack", kRepack, 1, "names an invalid shard"},
      {"src_index_shard_absolute", "src_index_shard_absolute", "k3-repack", kRepack, 1, "names an invalid shard"},
      // values
      {"src_config_num_experts_1e6", "src_config_num_experts_1e6", "k3-repack", kRepack, 1, "num_experts': must be in [1, 4096]"},
      {"src_config_layers_1e5", "src_config_layers_1e5", "k3-repack", kRepack, 1, "num_hidden_layers': must be in [1, 128]"},
      {"src_config_hidden_huge", "src_config_hidden_huge", "k3-repack", kRepack, 1, "hidden_size': must be in"},
      {"src_config_vocab_negative", "src_config_vocab_negative", "k3-repack", kRepack, 1, "vocab_size': must be in"},
      {"threads_100000", "none", "k3-repack", {"{SRC}", "{OUT}", "--threads", "100000"}, 2, "--threads 100000: must be in [1, "},
      {"threads_minus_1", "none", "k3-repack", {"{SRC}", "{OUT}", "--threads", "-1"}, 2, "--threads -1: must be in"},
      {"threads_0", "none", "k3-repack", {"{SRC}", "{OUT}", "--threads", "0"}, 2, "--threads 0: must be in"},
      {"threads_2e64", "none", "k3-repack", {"{SRC}", "{OUT}", "--threads", "18446744073709551615"}, 2, ""},
      // tensors k3-verify would reject: refused before anything is published
      {"src_dense_wrong_shape", "src_dense_wrong_shape", "k3-repack", kRepack, 1, "g_proj.weight' has shape [64, 256] but config.json implies [128, 128]"},
      {"src_norm_wrong_shape", "src_norm_wrong_shape", "k3-repack", kRepack, 1, "input_layernorm.weight' has shape [2, 64]"},
      {"src_norm_int_dtype", "src_norm_int_dtype", "k3-repack", kRepack, 1, "has dtype I16, config.json implies a float tensor"},
      {"src_expert_i8", "src_expert_i8", "k3-repack", kRepack, 1, "is not U8 with the shape config.json implies"},
      {"src_unknown_tensor", "src_unknown_tensor", "k3-repack", kRepack, 1, "extra_unknown.weight' is not implied by config.json"},
      {"src_nan_quantized", "src_nan_quantized", "k3-repack", kRepack, 1, "q_proj.weight' holds a non-finite BF16 value (NaN or Inf) at element 77"},
      {"src_inf_quantized", "src_inf_quantized", "k3-repack", kRepack, 1, "k_proj.weight' holds a non-finite BF16 value (NaN or Inf) at element 5"},
      {"src_neg_inf_norm", "src_neg_inf_norm", "k3-repack", kRepack, 1, "input_layernorm.weight' holds a non-finite BF16 value (NaN or Inf) at element 3"},
      {"src_nan_f32", "src_nan_f32", "k3-repack", kRepack, 1, "dt_bias' holds a non-finite F32 value (NaN or Inf) at element 9"},
      // tokenizer files are validated, not copied as they are
      {"src_tiktoken_dup_rank", "src_tiktoken_dup_rank", "k3-repack", kRepack, 1, "rank 0 appears twice"},
      {"src_tiktoken_dup_bytes", "src_tiktoken_dup_bytes", "k3-repack", kRepack, 1, "have the same bytes"},
      {"src_tiktoken_garbage", "src_tiktoken_garbage", "k3-repack", kRepack, 1, "expected 'base64 rank'"},
      {"src_tiktoken_bad_base64", "src_tiktoken_bad_base64", "k3-repack", kRepack, 1, "invalid base64 token"},
      {"src_tokcfg_invalid_json", "src_tokcfg_invalid_json", "k3-repack", kRepack, 1, "not valid JSON"},
      {"src_tokcfg_id_collides", "src_tokcfg_id_collides", "k3-repack", kRepack, 1, "collides with tiktoken rank"},
      {"src_tokcfg_dup_content", "src_tokcfg_dup_content", "k3-repack", kRepack, 1, "have the same content"},
  };
}

std::vector<Case> verifyCases() {
  return {
      // special files in the container: a problem, never a hang
      {"c_config_fifo", "c_config_fifo", "k3-verify", kVerify, 1, "config is a FIFO"},
      {"c_config_devzero", "c_config_devzero", "k3-verify", kVerify, 1, "config is a character device"},
      {"c_config_dir", "c_config_dir", "k3-verify", kVerify, 1, "config is a directory"},
      {"c_config_huge", "c_config_huge", "k3-verify", kVerify, 1, "more than the limit"},
      {"c_index_fifo", "c_index_fifo", "k3-verify", kVerify, 1, "index is a FIFO"},
      {"c_index_devzero", "c_index_devzero", "k3-verify", kVerify, 1, "index is a character device"},
      {"c_index_huge", "c_index_huge", "k3-verify", kVerify, 1, "more than the limit"},
      {"c_manifest_fifo", "c_manifest_fifo", "k3-verify", kVerify, 1, "manifest is a FIFO"},
      {"c_manifest_devzero", "c_manifest_devzero", "k3-verify", kVerify, 1, "manifest is a character device"},
      {"c_manifest_dir", "c_manifest_dir", "k3-verify", kVerify, 1, "manifest is a directory"},
      {"c_manifest_huge", "c_manifest_huge", "k3-verify", kVerify, 1, "more than the limit"},
      {"c_shard_fifo", "c_shard_fifo", "k3-verify", kVerify, 1, "shard is a FIFO"},
      {"c_shard_fifo_full", "c_shard_fifo", "k3-verify", kVerifyFull, 1, "shard is a FIFO"},
      {"c_shard_devzero", "c_shard_devzero", "k3-verify", kVerify, 1, "shard is a character device"},
      {"c_shard_devzero_full", "c_shard_devzero", "k3-verify", kVerifyFull, 1, "shard is a character device"},
      {"c_shard_dir", "c_shard_dir", "k3-verify", kVerify, 1, "shard is a directory"},
      {"c_tiktoken_fifo_full", "c_tiktoken_fifo", "k3-verify", kVerifyFull, 1, "copied file tiktoken.model"},
      {"c_tiktoken_devzero_full", "c_tiktoken_devzero", "k3-verify", kVerifyFull, 1, "copied file tiktoken.model"},
      // nothing unexpected in a SOUND container
      {"c_unexpected_file", "c_unexpected_file", "k3-verify", kVerify, 1, "file notes.txt is in the container but not in the manifest"},
      {"c_unexpected_dir", "c_unexpected_dir", "k3-verify", kVerify, 1, "file junk is in the container"},
      {"c_unexpected_fifo", "c_unexpected_fifo", "k3-verify", kVerify, 1, "file pipe is in the container"},
      // manifest names confined to the container
      {"c_files_dotdot", "c_files_dotdot", "k3-verify", kVerify, 1, "'../../../../etc/hostname' is not a file name inside the container"},
      {"c_files_absolute", "c_files_absolute", "k3-verify", kVerify, 1, "'/dev/zero' is not a file name inside the container"},
      {"c_files_subdir", "c_files_subdir", "k3-verify", kVerify, 1, "'sub/x' is not a file name inside the container"},
      {"c_files_empty", "c_files_empty", "k3-verify", kVerify, 1, "'' is not a file name inside the container"},
      {"c_files_dot", "c_files_dot", "k3-verify", kVerify, 1, "'.' is not a file name inside the container"},
      {"c_files_symlink_out", "c_files_symlink_out", "k3-verify", kVerifyFull, 1, "outside"},
      {"c_files_symlink_devzero", "c_files_symlink_devzero", "k3-verify", kVerifyFull, 1, "resolves to /dev/zero, outside"},
      {"c_shard_name_dotdot", "c_shard_name_dotdot", "k3-verify", kVerify, 1, "is not a file name inside the container"},
      {"c_source_file_dotdot", "c_source_file_dotdot", "k3-verify", kVerifySource, 1, "'../../etc/passwd' is not a file name"},
      // manifest against config.json
      {"c_config_sha_changed", "c_config_sha_changed", "k3-verify", kVerify, 1, "(config changed after conversion)"},
      {"c_manifest_num_experts_1e6", "c_manifest_num_experts_1e6", "k3-verify", kVerify, 1, "num_experts: 1000000 is outside [1, 4096]"},
      {"c_manifest_layers_1e6", "c_manifest_layers_1e6", "k3-verify", kVerify, 1, "num_hidden_layers: 1000000 is outside [1, 128]"},
      {"c_manifest_num_experts_other", "c_manifest_num_experts_other", "k3-verify", kVerify, 1, "manifest source.num_experts is 8, config.json says 16"},
      {"c_manifest_layers_other", "c_manifest_layers_other", "k3-verify", kVerify, 1, "manifest source.num_hidden_layers is 3, config.json says 8"},
      {"c_manifest_prefix_other", "c_manifest_prefix_other", "k3-verify", kVerify, 1, "manifest source.prefix is ''"},
      {"c_manifest_bits_absurd", "c_manifest_bits_absurd", "k3-verify", kVerify, 1, "bits: 1000 is outside [1, 16]"},
      {"c_manifest_bits_5", "c_manifest_bits_5", "k3-verify", kVerify, 1, "bit width 5"},
      {"c_config_num_experts_1e6", "c_config_num_experts_1e6", "k3-verify", kVerify, 1, "num_experts': must be in [1, 4096]"},
      // --source proves every tensor, even with the shard digest recomputed
      {"c_dense_byte_rehashed", "c_dense_byte_rehashed", "k3-verify", kVerifySource, 1, "q_proj.weight': row 0 differs from the source re-quantized (int4-g64"},
      {"c_norm_byte_rehashed", "c_norm_byte_rehashed", "k3-verify", kVerifySource, 1, "input_layernorm.weight': byte 1 of the tensor differs from the source"},
      {"c_scale_byte_rehashed", "c_scale_byte_rehashed", "k3-verify", kVerifySource, 1, "v_proj.weight': .qs scales of rows"},
      {"src_dense_byte", "src_dense_byte", "k3-verify", kVerifySource, 1, "o_proj.weight': row 0 differs from the source re-quantized"},
      {"src_shard_fifo_source", "src_shard_fifo", "k3-verify", kVerifySource, 1, "source shard"},
      {"src_shard_devzero_source", "src_shard_devzero", "k3-verify", kVerifySource, 1, "source shard"},
      // could not run: usage or DST unusable (exit 2, one line)
      {"v_threads_100000", "none", "k3-verify", {"{C}", "--threads", "100000"}, 2, "--threads 100000: must be in [1, "},
      {"v_threads_minus_1", "none", "k3-verify", {"{C}", "--threads", "-1"}, 2, "--threads -1: must be in"},
      {"v_threads_0", "none", "k3-verify", {"{C}", "--full", "--threads", "0"}, 2, "--threads 0: must be in"},
      {"v_dst_is_file", "none", "k3-verify", {"{C}/config.json"}, 2, "not a readable directory"},
      {"v_dst_is_devzero", "none", "k3-verify", {"/dev/zero"}, 2, "not a readable directory"},
      {"v_source_is_file", "none", "k3-verify", {"{C}", "--source", "{SRC}/config.json"}, 2, "source is not a readable directory"},
      // what must stay SOUND
      {"c_tokenizer_json_ok", "c_tokenizer_json_ok", "k3-verify", kVerify, 0, ""},
      {"c_stale_lock_ok", "c_stale_lock_ok", "k3-verify", kVerify, 0, ""},
      {"c_sound_source", "none", "k3-verify", kVerifySource, 0, ""},
  };
}

std::vector<Case> runAndTokgenCases() {
  const std::string shard = "{C}/model-00002-of-000009.safetensors";
  return {
      // outputs never clobber inputs or special files
      {"run_logits_into_shard", "none", "k3-run", {"{C}", "--ids", "1,2,3", "--logits-out", shard}, 2, "output is a file this run reads"},
      {"run_logits_into_config", "none", "k3-run", {"{C}", "--ids", "1,2,3", "--logits-out", "{C}/config.json"}, 2, "output is a file this run reads"},
      {"run_logits_devnull", "none", "k3-run", {"{C}", "--ids", "1,2,3", "--logits-out", "/dev/null"}, 2, "output exists and is not a regular file"},
      {"run_logits_dir", "none", "k3-run", {"{C}", "--ids", "1,2,3", "--logits-out", "{ROOT}"}, 2, "output exists and is not a regular file"},
      {"run_config_fifo", "c_config_fifo", "k3-run", {"{C}", "--ids", "1,2,3"}, 1, "config is a FIFO"},
      {"run_index_fifo", "c_index_fifo", "k3-run", {"{C}", "--ids", "1,2,3"}, 1, "index is a FIFO"},
      {"run_shard_fifo", "c_shard_fifo", "k3-run", {"{C}", "--ids", "1,2,3"}, 1, "shard is a FIFO"},
      {"run_shard_devzero", "c_shard_devzero", "k3-run", {"{C}", "--ids", "1,2,3"}, 1, "shard is a character device"},
      {"tokgen_o_own_input", "none", "k3-tokgen", {"{C}", "-o", "{C}/tiktoken.model"}, 2, "output is a file this run reads"},
      {"tokgen_o_own_config", "none", "k3-tokgen", {"{C}", "-o", "{C}/tokenizer_config.json"}, 2, "output is a file this run reads"},
      {"tokgen_o_devnull", "none", "k3-tokgen", {"{C}", "-o", "/dev/null"}, 2, "output exists and is not a regular file"},
      {"tokgen_tiktoken_fifo", "c_tiktoken_fifo", "k3-tokgen", {"{C}", "-o", "{ROOT}/t.json"}, 1, "tokenizer model is a FIFO"},
      {"tokgen_tiktoken_devzero", "c_tiktoken_devzero", "k3-tokgen", {"{C}", "-o", "{ROOT}/t.json"}, 1, "tokenizer model is a character device"},
      {"tokgen_tokcfg_fifo", "src_tokcfg_fifo", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 1, "tokenizer config is a FIFO"},
      {"tokgen_tiktoken_huge", "src_tiktoken_huge", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 1, "more than the limit"},
      {"tokgen_dup_rank", "src_tiktoken_dup_rank", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 1, "rank 0 appears twice"},
  };
}

auto caseName = [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); };
INSTANTIATE_TEST_SUITE_P(Repack, Hostile, ::testing::ValuesIn(repackCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Verify, Hostile, ::testing::ValuesIn(verifyCases()), caseName);
INSTANTIATE_TEST_SUITE_P(RunTokgen, Hostile, ::testing::ValuesIn(runAndTokgenCases()), caseName);

// --- cases that need more than one run ---

TEST(HostileRepack, SecondWriterGetsInUseByPidAndStaleLockIsTakenOver) {
  const Prepared p = prepare("lock", "none");
  fs::create_directories(p.out);
  const std::string lockPath = p.out + "/.k3-repack.lock";
  {
    const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    const std::string pid = std::to_string(::getpid()) + "\n";
    ASSERT_EQ(::write(fd, pid.data(), pid.size()), static_cast<ssize_t>(pid.size()));
    ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // a live writer holds DST
    const k3test::RunResult r = runCase({"lock", "none", "k3-repack", kRepack, 1, ""}, p);
    ::close(fd);
    EXPECT_EQ(r.exitCode, 1) << r.err;
    EXPECT_NE(r.err.find("in use by PID " + std::to_string(::getpid())), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(p.out + "/k3-manifest.json"));
  }
  // The holder is gone (no flock), its PID still in the file: taken over.
  k3test::writeFile(lockPath, "999999\n");
  const k3test::RunResult ok = runCase({"lock", "none", "k3-repack", kRepack, 0, ""}, p);
  ASSERT_EQ(ok.exitCode, 0) << ok.err;
  EXPECT_FALSE(fs::exists(lockPath)) << "lock removed when done";
  EXPECT_TRUE(snapshotDir(p.out) == snapshotDir(tinyContainer(4))) << "byte-identical to a plain run";
  fs::remove_all(p.root);
}

TEST(HostileRepack, DropUnknownGivesAContainerVerifyCallsSound) {
  const Prepared p = prepare("drop-unknown", "src_unknown_tensor");
  std::vector<std::string> args = kRepack;
  args.push_back("--drop-unknown");
  const k3test::RunResult r = runCase({"drop", "src_unknown_tensor", "k3-repack", args, 0, ""}, p);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const VerifyOutcome v = verifyJson({p.out, "--full"});
  EXPECT_EQ(v.exitCode, 0) << v.raw;
  EXPECT_TRUE(v.sound);
  fs::remove_all(p.root);
}

TEST(HostileRun, LogitsOutAppearsWholeWithNoTempLeft) {
  const Prepared p = prepare("logits-ok", "none");
  const k3test::RunResult r = runCase({"l", "none", "k3-run", {"{C}", "--ids", "1,2,3", "--logits-out", "{ROOT}/l.f32"}, 0, ""}, p);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(fs::file_size(p.root + "/l.f32"), 3u * 768u * 4u);  // positions x vocab f32
  for (const auto& e : fs::directory_iterator(p.root))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  fs::remove_all(p.root);
}

}  // namespace
