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
  std::vector<std::string> args;  // {SRC} {C} {OUT} {ROOT} are substituted; "<PATH" is stdin
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

std::map<std::string, std::string> varsOf(const Prepared& p) {
  return {{"{SRC}", p.src}, {"{C}", p.c}, {"{OUT}", p.out}, {"{ROOT}", p.root}};
}

k3test::RunResult runCase(const Case& c, const Prepared& p) {
  const std::map<std::string, std::string> vars = varsOf(p);
  std::vector<std::string> argv{tool(c.tool)};
  k3test::RunOptions opts;
  opts.timeoutMs = kTimeoutMs;
  opts.stdinPath = "/dev/null";
  for (const auto& a : c.args) {
    if (a.size() > 1 && a[0] == '<') opts.stdinPath = substitute(a.substr(1), vars);
    else argv.push_back(substitute(a, vars));
  }
  return k3test::run(argv, opts);
}

class Hostile : public ::testing::TestWithParam<Case> {};

TEST_P(Hostile, CleanOneLineErrorNoHangNoCrashBoundedInputsUnchanged) {
  const Case& c = GetParam();
  const Prepared p = prepare(c.name, c.setup);
  const auto srcBefore = fingerprint(p.src), cBefore = fingerprint(p.c);
  const k3test::RunResult r = runCase(c, p);
  const std::string expect = substitute(c.expect, varsOf(p));
  ASSERT_FALSE(r.timedOut) << c.tool << " hung (killed after " << kTimeoutMs << " ms)";
  EXPECT_EQ(r.signal, 0) << "crashed: " << r.err;
  EXPECT_EQ(r.exitCode, c.exitCode) << "stdout: " << r.out << "\nstderr: " << r.err;
  EXPECT_LT(r.maxRssKb, kMaxRssKb) << "peak RSS";
  const bool verifyVerdict = std::string(c.tool) == "k3-verify" && c.exitCode == 1;
  if (c.exitCode != 0 && !verifyVerdict) {  // an error: exactly one line on stderr
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_NE(r.err.find(expect), std::string::npos) << "expected '" << expect << "' in: " << r.err;
  }
  if (verifyVerdict) {  // problems, one line each, on stdout
    EXPECT_TRUE(r.err.empty()) << r.err;
    bool found = false;
    size_t pos = 0;
    for (size_t nl; (nl = r.out.find('\n', pos)) != std::string::npos; pos = nl + 1) {
      const std::string line = r.out.substr(pos, nl - pos);
      found = found || (line.rfind("[", 0) == 0 && line.find(expect) != std::string::npos);
    }
    EXPECT_TRUE(found) << "expected a problem line with '" << expect << "' in:\n" << r.out;
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
      {"jobs_100000", "none", "k3-repack", {"{SRC}", "{OUT}", "--jobs", "100000"}, 2, "--jobs 100000: must be in [1, "},
      {"jobs_minus_1", "none", "k3-repack", {"{SRC}", "{OUT}", "--jobs", "-1"}, 2, "--jobs -1: must be in"},
      {"jobs_0", "none", "k3-repack", {"{SRC}", "{OUT}", "--jobs", "0"}, 2, "--jobs 0: must be in"},
      {"io_unknown", "none", "k3-repack", {"{SRC}", "{OUT}", "--io", "fast"}, 2, "--io"},
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
      // arguments that would repack the wrong thing (issue 29)
      {"repack_shards_empty", "none", "k3-repack", {"{SRC}", "{OUT}", "--shards", ""}, 2, "k3-repack: --shards is empty"},
      {"repack_dst_inside_src", "none", "k3-repack", {"{SRC}", "{SRC}/out"}, 2,
       "k3-repack: {SRC}/out: DST is inside SRC {SRC} (a later run would read the container as source); put it outside the snapshot"},
      {"repack_src_is_container", "none", "k3-repack", {"{C}", "{OUT}"}, 2,
       "k3-repack: {C}: a k3kit container already (it has k3-manifest.json), not a Hugging Face snapshot: k3-verify and k3-run read it as it is"},
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
      {"c_files_1e6", "c_files_1e6", "k3-verify", kVerifyFull, 1, "k3-manifest.json: files: more than 1024 entries (k3-repack copies a few snapshot files)"},
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

// k3-run's options: values, the model's limits, --ctx in every mode, id
// lists, the files options name (ROOT/in), stdin; and every app's command
// line parse errors (one line, exit 2).
std::vector<Case> runOptionCases() {
  const char* run = "k3-run";
  using V = std::vector<std::string>;
  return {
      // threads
      {"run_threads_100000", "none", run, {"{C}", "--ids", "1,2,3", "--threads", "100000"}, 2, "--threads 100000: must be in [1, "},
      {"run_threads_minus_1", "none", run, {"{C}", "--ids", "1,2,3", "--threads", "-1"}, 2, "--threads -1: must be in [1, "},
      {"run_threads_2e64", "none", run, {"{C}", "--ids", "1,2,3", "--threads", "18446744073709551615"}, 2, "k3-run: --threads"},
      {"run_threads_garbage", "none", run, {"{C}", "--ids", "1,2,3", "--threads", "many"}, 2, "k3-run: Could not convert: --threads"},
      {"serve_threads_100000", "none", run, {"{C}", "--serve", "--port", "0", "--threads", "100000"}, 2, "--threads 100000: must be in"},
      // --ctx / --chunk against the model and the memory, before allocating
      {"run_ctx_40000000", "none", run, {"{C}", "-p", "hi", "--ctx", "40000000"}, 2, "--ctx 40000000: more than the model's max_position_embeddings 1048576"},
      {"run_chunk_4000000", "none", run, {"{C}", "-p", "hi", "--chunk", "4000000"}, 2, "--chunk 4000000: more than the model's max_position_embeddings"},
      {"run_ctx_0", "none", run, {"{C}", "-p", "hi", "--ctx", "0"}, 2, "k3-run: --ctx: Value 0 not in range 1 to"},
      {"run_ctx_negative", "none", run, {"{C}", "-p", "hi", "--ctx", "-5"}, 2, "k3-run: --ctx: Value -5 not in range"},
      {"run_chunk_0", "none", run, {"{C}", "-p", "hi", "--chunk", "0"}, 2, "k3-run: --chunk: Value 0 not in range"},
      {"run_ctx_2e64", "none", run, {"{C}", "-p", "hi", "--ctx", "18446744073709551615"}, 2, "k3-run: --ctx"},
      {"run_ctx_memory", "c_no_max_positions", run, {"{C}", "-p", "hi", "--ctx", "1000000000"}, 2, "the session would need"},
      {"run_chunk_memory", "c_no_max_positions", run, {"{C}", "--ids", "1,2", "--ctx", "900000000", "--chunk", "900000000"}, 2, "of memory, more than this machine's"},
      {"run_ctx_memory_ids", "c_no_max_positions", run, {"{C}", "--ids", "1,2", "--ctx", "1000000000000"}, 2, "the session would need"},
      {"serve_ctx_40000000", "none", run, {"{C}", "--serve", "--port", "0", "--ctx", "40000000"}, 2, "--ctx 40000000: more than the model's"},
      {"serve_chunk_memory", "c_no_max_positions", run, {"{C}", "--serve", "--port", "0", "--ctx", "1000000000"}, 2, "--parallel 4 x --ctx 1000000000: 4 sequences of"},
      // --ctx holds in every mode
      {"run_ctx_ids", "none", run, {"{C}", "--ctx", "1", "--ids", "1,2,3,4"}, 2, "--ids: 4 ids, more than --ctx 1"},
      {"run_ctx_prompt_ids", "none", run, {"{C}", "--ctx", "2", "--prompt-ids", "1,2,3"}, 2, "--prompt-ids: 3 ids, more than --ctx 2"},
      {"run_ctx_perplexity", "in_text", run, {"{C}", "--ctx", "4", "--perplexity", "{ROOT}/in"}, 2, "--perplexity: the text is"},
      {"run_ctx_prompt", "none", run, {"{C}", "--ctx", "2", "-p", "the quick brown fox jumps"}, 2, "tokens, more than --ctx 2"},
      {"run_ctx_chat", "none", run, {"{C}", "--ctx", "3", "--chat", "-p", "hello there"}, 2, "tokens (with the system message, tools and chat format), more than --ctx 3 holds"},
      {"run_ctx_ids_file", "in_text", run, {"{C}", "--ctx", "2", "--ids", "{ROOT}/in"}, 2, "--ids {ROOT}/in: unexpected character 't'"},
      // -n is clamped to the context (nothing reserved up front)
      {"run_n_2e32", "none", run, {"{C}", "-p", "hi", "-n", "4294967295", "--ctx", "16"}, 0, ""},
      {"run_n_2e64", "none", run, {"{C}", "--prompt-ids", "1,2", "-n", "18446744073709551615", "--ctx", "8", "--json"}, 0, ""},
      {"run_n_negative", "none", run, {"{C}", "-p", "hi", "-n", "-1"}, 2, "k3-run: --max-tokens: Value -1 is negative"},
      // sampling values
      {"run_temp_minus_1", "none", run, {"{C}", "-p", "hi", "--temp", "-1"}, 2, "--temp -1: must be a number in [0, 100]"},
      {"run_temp_nan", "none", run, {"{C}", "-p", "hi", "--temp", "nan"}, 2, "--temp nan: must be a number"},
      {"run_temp_inf", "none", run, {"{C}", "-p", "hi", "--temp", "inf"}, 2, "--temp inf: must be a number"},
      {"run_temp_1e9", "none", run, {"{C}", "-p", "hi", "--temp", "1e9"}, 2, "--temp 1e+09: must be a number"},
      {"run_top_p_2", "none", run, {"{C}", "-p", "hi", "--top-p", "2"}, 2, "--top-p 2: must be a number in [0, 1]"},
      {"run_top_p_minus_1", "none", run, {"{C}", "-p", "hi", "--top-p", "-1"}, 2, "--top-p -1: must be a number in [0, 1]"},
      {"run_top_p_nan", "none", run, {"{C}", "-p", "hi", "--top-p", "nan"}, 2, "--top-p nan: must be a number"},
      {"run_top_k_minus_5", "none", run, {"{C}", "-p", "hi", "--top-k", "-5"}, 2, "--top-k -5: must be in [0, "},
      {"run_top_k_huge", "none", run, {"{C}", "-p", "hi", "--top-k", "2000000000"}, 2, "--top-k 2000000000: must be in"},
      {"serve_temp_nan", "none", run, {"{C}", "--serve", "--port", "0", "--temp", "nan"}, 2, "--temp nan: must be"},
      // id lists: one grammar, inside the vocabulary
      {"run_ids_double_comma", "none", run, {"{C}", "--ids", "1,,2"}, 2, "--ids: empty token id before the comma at offset 2"},
      {"run_ids_trailing_comma", "none", run, {"{C}", "--ids", "1,2,"}, 2, "--ids: empty token id after the last comma"},
      {"run_ids_leading_comma", "none", run, {"{C}", "--ids", ",1"}, 2, "--ids: empty token id before the comma at offset 0"},
      {"run_ids_garbage", "none", run, {"{C}", "--ids", "1 x"}, 2, "--ids: unexpected character 'x' at offset 2"},
      {"run_ids_control_char", "none", run, {"{C}", "--ids", "1\x1b[2J"}, 2, "--ids: unexpected character '\\x1b' at offset 1"},
      {"run_ids_negative", "none", run, {"{C}", "--ids=-1"}, 2, "--ids: unexpected character '-' at offset 0"},
      {"run_ids_overflow", "none", run, {"{C}", "--ids", "1,99999999999"}, 2, "--ids: token id at offset 2 is too large"},
      {"run_ids_past_vocab", "none", run, {"{C}", "--ids", "1,768"}, 2, "--ids: token id 768 at offset 2 is outside the vocabulary [0, 768)"},
      {"run_ids_empty", "none", run, {"{C}", "--ids", " "}, 2, "--ids: no token ids"},
      {"run_ids_not_a_file", "none", run, {"{C}", "--ids", "{ROOT}/missing.txt"}, 2, "is neither a file nor a list of token ids"},
      {"run_prompt_ids_past_vocab", "none", run, {"{C}", "--prompt-ids", "767,768"}, 2, "--prompt-ids: token id 768 at offset 4"},
      {"run_prompt_ids_garbage", "none", run, {"{C}", "--prompt-ids", "1;2"}, 2, "--prompt-ids: unexpected character ';'"},
      {"run_ids_file_fifo", "in_fifo", run, {"{C}", "--ids", "{ROOT}/in"}, 1, "--ids: {ROOT}/in: id list is a FIFO, not a regular file"},
      {"run_ids_file_devzero", "in_devzero", run, {"{C}", "--ids", "{ROOT}/in"}, 1, "id list is a character device"},
      {"run_ids_file_dir", "in_dir", run, {"{C}", "--ids", "{ROOT}/in"}, 1, "id list is a directory"},
      {"run_ids_file_huge", "in_sparse_300m", run, {"{C}", "--ids", "{ROOT}/in"}, 1, "more than the limit"},
      {"run_ids_file_empty", "in_empty", run, {"{C}", "--ids", "{ROOT}/in"}, 2, "--ids {ROOT}/in: no token ids"},
      {"run_ids_file_garbage", "in_ids_garbage", run, {"{C}", "--ids", "{ROOT}/in"}, 2, "--ids {ROOT}/in: unexpected character 'f' at offset 8"},
      {"run_ids_file_double_comma", "in_ids_double_comma", run, {"{C}", "--ids", "{ROOT}/in"}, 2, "empty token id before the comma at offset 4"},
      {"run_ids_file_past_vocab", "in_ids_past_vocab", run, {"{C}", "--ids", "{ROOT}/in"}, 2, "token id 768 at offset 4 is outside the vocabulary"},
      {"run_ids_file_overflow", "in_ids_overflow", run, {"{C}", "--ids", "{ROOT}/in"}, 2, "is too large"},
      {"run_prompt_ids_file_fifo", "in_fifo", run, {"{C}", "--prompt-ids", "{ROOT}/in"}, 1, "--prompt-ids: {ROOT}/in: id list is a FIFO"},
      {"run_ids_file_ok", "in_ids_ok", run, {"{C}", "--ids", "{ROOT}/in", "--ctx", "3"}, 0, ""},
      // modes that do not combine
      {"run_ids_with_prompt", "none", run, {"{C}", "--ids", "1,2", "-p", "hi"}, 2, "--ids goes alone: not with -p, --chat or --perplexity"},
      {"run_ids_with_chat", "none", run, {"{C}", "--ids", "1,2", "--chat"}, 2, "--ids goes alone"},
      {"run_ids_with_perplexity", "in_text", run, {"{C}", "--ids", "1,2", "--perplexity", "{ROOT}/in"}, 2, "--ids goes alone"},
      {"run_perplexity_with_prompt", "in_text", run, {"{C}", "--perplexity", "{ROOT}/in", "-p", "hi"}, 2, "--perplexity goes alone"},
      {"run_serve_with_ids", "none", run, {"{C}", "--serve", "--ids", "1"}, 2, "--serve goes alone"},
      // files options name
      {"run_perplexity_fifo", "in_fifo", run, {"{C}", "--perplexity", "{ROOT}/in"}, 1, "text is a FIFO, not a regular file"},
      {"run_perplexity_devzero", "in_devzero", run, {"{C}", "--perplexity", "{ROOT}/in"}, 1, "text is a character device"},
      {"run_perplexity_dir", "in_dir", run, {"{C}", "--perplexity", "{ROOT}/in"}, 1, "text is a directory"},
      {"run_perplexity_huge", "in_sparse_300m", run, {"{C}", "--perplexity", "{ROOT}/in"}, 1, "more than the limit"},
      {"run_perplexity_missing", "none", run, {"{C}", "--perplexity", "{ROOT}/missing.txt"}, 1, "missing.txt"},
      {"run_perplexity_empty", "in_empty", run, {"{C}", "--perplexity", "{ROOT}/in"}, 1, "in: no text: nothing to score"},
      {"run_seed_minus_1", "none", run, {"{C}", "-p", "hi", "--temp", "1", "--seed", "-1"}, 2, "k3-run: --seed: Value -1 is negative"},
      {"serve_api_key_fifo", "in_fifo", run, {"{C}", "--serve", "--port", "0", "--api-key-file", "{ROOT}/in"}, 1, "API key file is a FIFO"},
      {"serve_api_key_devzero", "in_devzero", run, {"{C}", "--serve", "--port", "0", "--api-key-file", "{ROOT}/in"}, 1, "API key file is a character device"},
      {"serve_api_key_huge", "in_sparse_100k", run, {"{C}", "--serve", "--port", "0", "--api-key-file", "{ROOT}/in"}, 1, "API key file is 100000 bytes, more than the limit of 65536"},
      {"serve_api_key_empty", "in_empty", run, {"{C}", "--serve", "--port", "0", "--api-key-file", "{ROOT}/in"}, 2, "the API key file is empty"},
      {"serve_api_key_dir", "in_dir", run, {"{C}", "--serve", "--port", "0", "--api-key-file", "{ROOT}/in"}, 1, "API key file is a directory"},
      // stdin
      {"run_chat_stdin_devzero", "none", run, {"{C}", "--chat", "-n", "1", "</dev/zero"}, 1, "<stdin>: a chat line is more than the limit"},
      {"run_chat_stdin_long_line", "in_sparse_300m", run, {"{C}", "--chat", "-n", "1", "<{ROOT}/in"}, 1, "chat line is more than the limit"},
      // config.json: a key twice
      {"run_config_dup_key", "c_config_dup_key", run, {"{C}", "--ids", "1"}, 1, "key 'text_config.hidden_size' appears twice"},
      {"repack_config_dup_key", "src_config_dup_key", "k3-repack", kRepack, 1, "key 'text_config.hidden_size' appears twice"},
      {"verify_config_dup_key", "c_config_dup_key", "k3-verify", kVerify, 1, "appears twice"},
      // k3-run's start gate: k3-verify's fast checks before mapping (every mode)
      {"gate_manifest_garbage", "c_manifest_garbage", run, {"{C}", "--ids", "1"}, 1, "not a sound container: [manifest] {C}/k3-manifest.json: not valid JSON"},
      {"gate_manifest_no_shards", "c_manifest_no_shards", run, {"{C}", "--ids", "1"}, 1, "expert missing from the manifest (and 120 more problems; k3-verify {C} lists them)"},
      {"gate_manifest_size_wrong", "c_manifest_size_wrong", run, {"{C}", "--ids", "1"}, 1, "[size] shard model-00003-of-000009.safetensors: file is 251616 bytes, manifest says 251617"},
      {"gate_index_missing", "c_index_missing", run, {"{C}", "--ids", "1"}, 1, "not a sound container: [index] {C}/model.safetensors.index.json: file does not exist"},
      {"gate_index_wrong_shard", "c_index_wrong_shard", run, {"{C}", "--ids", "1"}, 1, "index says shard model-00001-of-000009.safetensors but the tensor is in model-00003"},
      {"gate_layers_fewer", "c_layers_fewer", run, {"{C}", "--ids", "1"}, 1, "manifest source.num_hidden_layers is 8, config.json says 4"},
      {"gate_expert_dtype_i8", "c_expert_dtype_i8", run, {"{C}", "--ids", "1"}, 1, "experts.3.w1.weight_packed': dtype I8, expected U8 (MXFP4)"},
      {"gate_norm_shape_wrong", "c_norm_shape_wrong", run, {"{C}", "--ids", "1"}, 1, "input_layernorm.weight':  shape is [2, 64], expected [128]"},
      {"gate_shard_truncated", "c_shard_truncated", run, {"{C}", "--ids", "1"}, 1, "is beyond the data section"},
      {"gate_shard_header_garbage", "c_shard_header_garbage", run, {"{C}", "--ids", "1"}, 1, "header length 1099511627776 exceeds the file size"},
      {"gate_config_sha_changed", "c_config_sha_changed", run, {"{C}", "--ids", "1"}, 1, "(config changed after conversion) (and 1 more problem; k3-verify"},
      {"gate_manifest_experts_other", "c_manifest_num_experts_other", run, {"{C}", "--ids", "1"}, 1, "manifest source.num_experts is 8, config.json says 16"},
      {"gate_serve", "c_layers_fewer", run, {"{C}", "--serve", "--port", "0"}, 1, "manifest source.num_hidden_layers is 8, config.json says 4"},
      {"gate_chat", "c_expert_dtype_i8", run, {"{C}", "--chat", "-p", "hi"}, 1, "dtype I8, expected U8"},
      {"gate_prompt", "c_index_missing", run, {"{C}", "-p", "hi"}, 1, "[index] {C}/model.safetensors.index.json: file does not exist"},
      {"gate_stray_file_ok", "c_unexpected_file", run, {"{C}", "--ids", "1,2"}, 0, ""},
      {"gate_tokenizer_json_ok", "c_tokenizer_json_ok", run, {"{C}", "--ids", "1,2"}, 0, ""},
      // k3-tokgen's inputs: capped, special files refused
      {"tokgen_encode_stdin_devzero", "none", "k3-tokgen", {"encode", "{C}", "</dev/zero"}, 1, "<stdin>: text is more than the limit"},
      {"tokgen_decode_stdin_devzero", "none", "k3-tokgen", {"decode", "{C}", "</dev/zero"}, 1, "<stdin>: id list is more than the limit"},
      {"tokgen_chat_stdin_devzero", "none", "k3-tokgen", {"chat", "{C}", "</dev/zero"}, 1, "<stdin>: chat request is more than the limit"},
      {"tokgen_chat_file_fifo", "in_fifo", "k3-tokgen", {"chat", "{C}", "-f", "{ROOT}/in"}, 1, "chat request is a FIFO"},
      {"tokgen_chat_file_devzero", "in_devzero", "k3-tokgen", {"chat", "{C}", "-f", "{ROOT}/in"}, 1, "chat request is a character device"},
      {"tokgen_chat_file_huge", "in_sparse_300m", "k3-tokgen", {"chat", "{C}", "-f", "{ROOT}/in"}, 1, "more than the limit"},
      {"tokgen_chat_file_garbage", "in_json_garbage", "k3-tokgen", {"chat", "{C}", "-f", "{ROOT}/in"}, 1, "{ROOT}/in"},
      {"tokgen_parse_ids_fifo", "in_fifo", "k3-tokgen", {"parse", "{C}", "{ROOT}/in"}, 1, "IDS: {ROOT}/in: id list is a FIFO"},
      {"tokgen_parse_ids_devzero", "in_devzero", "k3-tokgen", {"parse", "{C}", "{ROOT}/in"}, 1, "id list is a character device"},
      {"tokgen_parse_ids_stdin_devzero", "none", "k3-tokgen", {"parse", "{C}", "-", "</dev/zero"}, 1, "IDS: <stdin>: id list is more than the limit"},
      {"tokgen_parse_ids_double_comma", "none", "k3-tokgen", {"parse", "{C}", "1,,2"}, 2, "IDS: empty token id before the comma"},
      {"tokgen_parse_tools_fifo", "in_fifo", "k3-tokgen", {"parse", "{C}", "1,2", "--tools", "{ROOT}/in"}, 1, "chat request is a FIFO"},
      {"tokgen_decode_garbage", "none", "k3-tokgen", {"decode", "{C}", "--ids", "1", "x"}, 2, "--ids: unexpected character 'x'"},
      {"tokgen_decode_overflow", "none", "k3-tokgen", {"decode", "{C}", "--ids", "99999999999"}, 2, "is too large"},
      {"tokgen_bench_devzero", "in_devzero", "k3-tokgen", {"bench", "{C}", "--file", "{ROOT}/in"}, 1, "text is a character device"},
      {"tokgen_bench_fifo", "in_fifo", "k3-tokgen", {"bench", "{C}", "--file", "{ROOT}/in"}, 1, "text is a FIFO"},
      {"tokgen_check_devzero", "none", "k3-tokgen", {"{C}", "--check", "/dev/zero", "--no-write"}, 1,
       "k3-tokgen: /dev/zero: corpus is a character device, not a regular file"},
      {"tokgen_check_fifo", "in_fifo", "k3-tokgen", {"{C}", "--check", "{ROOT}/in", "--no-write"}, 1, "corpus is a FIFO"},
      {"tokgen_added_past_vocab", "src_tokcfg_past_vocab", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 1, "added token 800 '<|beyond|>' is past the vocabulary (ids 512..767)"},
      {"repack_added_past_vocab", "src_tokcfg_past_vocab", "k3-repack", kRepack, 1, "added token 800 '<|beyond|>' is past the vocabulary"},
      {"tokgen_encode_added_past_vocab", "src_tokcfg_past_vocab", "k3-tokgen", {"encode", "{SRC}", "-t", "hi"}, 1, "is past the vocabulary"},
      {"tokgen_reserved_past_ok", "src_tokcfg_reserved_past_ok", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 0, ""},
      {"tokgen_long_token_linear", "src_tiktoken_long_token", "k3-tokgen", {"{SRC}", "-o", "{ROOT}/t.json"}, 0, ""},
      // command lines: one line "APP: ... (see --help)", exit 2, in all four apps
      {"cli_run_unknown_flag", "none", run, {"{C}", "--bogus"}, 2, "k3-run: The following argument was not expected: --bogus (see --help)"},
      {"cli_run_no_container", "none", run, V{}, 2, "k3-run: container is required (see --help)"},
      {"cli_run_bad_activations", "none", run, {"{C}", "--activations", "fp8"}, 2, "k3-run: --activations: "},
      {"cli_repack_unknown_flag", "none", "k3-repack", {"{SRC}", "{OUT}", "--bogus"}, 2, "k3-repack: The following argument was not expected: --bogus (see --help)"},
      {"cli_repack_no_dst", "none", "k3-repack", {"{SRC}"}, 2, "k3-repack: DST is required (see --help)"},
      {"cli_repack_bits_5", "none", "k3-repack", {"{SRC}", "{OUT}", "--bits", "5"}, 2, "k3-repack: --bits: "},
      {"cli_repack_threads_garbage", "none", "k3-repack", {"{SRC}", "{OUT}", "--threads", "x"}, 2, "k3-repack: Could not convert: --threads"},
      {"cli_verify_unknown_flag", "none", "k3-verify", {"{C}", "--bogus"}, 2, "k3-verify: The following argument was not expected: --bogus (see --help)"},
      {"cli_verify_no_dst", "none", "k3-verify", V{}, 2, "k3-verify: DST is required (see --help)"},
      {"cli_verify_bad_io", "none", "k3-verify", {"{C}", "--full", "--io", "mmap"}, 2, "k3-verify: --io: "},
      {"cli_tokgen_unknown_flag", "none", "k3-tokgen", {"{C}", "--bogus"}, 2, "k3-tokgen: The following argument was not expected: --bogus (see --help)"},
      {"cli_tokgen_bench_no_file", "none", "k3-tokgen", {"bench", "{C}"}, 2, "k3-tokgen: --file is required (see --help)"},
      {"cli_tokgen_bench_repeat_0", "none", "k3-tokgen", {"bench", "{C}", "--file", "x", "--repeat", "0"}, 2, "k3-tokgen: --repeat: "},
  };
}

auto caseName = [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); };
INSTANTIATE_TEST_SUITE_P(Repack, Hostile, ::testing::ValuesIn(repackCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Verify, Hostile, ::testing::ValuesIn(verifyCases()), caseName);
INSTANTIATE_TEST_SUITE_P(RunTokgen, Hostile, ::testing::ValuesIn(runAndTokgenCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Options, Hostile, ::testing::ValuesIn(runOptionCases()), caseName);

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
