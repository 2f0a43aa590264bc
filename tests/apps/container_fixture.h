// Helpers shared by the k3-verify / k3-repack robustness tests: cached tiny
// containers, directory snapshots for byte-for-byte comparison, running a
// tool with an environment variable or an RLIMIT_FSIZE, and reading the
// k3-verify JSON report.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simdjson.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/test_env.h"

namespace k3test::container {

namespace fs = std::filesystem;

// Every regular file under `dir` (relative path -> bytes).
inline std::map<std::string, std::string> snapshotDir(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = readFile(e.path().string());
  return files;
}

inline void copyDir(const std::string& from, const std::string& to) {
  fs::remove_all(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

// Runs argv with extra environment entries ("K=V") and an optional file-size
// limit (RLIMIT_FSIZE, set in the child before exec). Output goes to files.
inline RunResult runWith(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         rlim_t fsizeLimit = RLIM_INFINITY, int killAfterMs = -1) {
  RunOptions opts;
  opts.env = env;
  opts.fileSizeLimit = fsizeLimit == RLIM_INFINITY ? 0 : static_cast<uint64_t>(fsizeLimit);
  opts.killAfterMs = killAfterMs;
  return run(argv, opts);
}

inline std::string tool(const std::string& name) { return binDir() + "/" + name; }

// The "error_kind" of an app's --json error report on stdout ("" if none).
inline std::string jsonErrorKind(const RunResult& r) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::string_view kind;
  if (parser.parse(r.out).get(root) != simdjson::SUCCESS) return "";
  if (root["error_kind"].get_string().get(kind) != simdjson::SUCCESS) return "";
  return std::string(kind);
}

// A tiny container repacked once per process at `bits` from synthSnapshot("tiny", 1).
inline std::string tinyContainer(int bits) {
  static std::map<int, std::string> cache;
  auto it = cache.find(bits);
  if (it != cache.end()) return it->second;
  const std::string src = synthSnapshot("tiny", 1);
  const std::string dst = freshDir("tiny-b" + std::to_string(bits)) + "/c";
  RunResult r = runTool("k3-repack", {src, dst, "--bits", std::to_string(bits)});
  if (r.exitCode != 0) throw std::runtime_error("k3-repack failed: " + r.err);
  cache[bits] = dst;
  return dst;
}

struct VerifyProblem {
  std::string kind, shard, tensor;
  int64_t layer = -1, expert = -1;
  std::string line;
};

struct VerifyOutcome {
  int exitCode = -1;
  bool sound = false;
  std::vector<VerifyProblem> problems;
  std::string raw;
};

// Runs k3-verify --json with `args` and decodes its report.
inline VerifyOutcome verifyJson(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.push_back("--json");
  RunResult r = runTool("k3-verify", a);
  VerifyOutcome v;
  v.exitCode = r.exitCode;
  v.raw = r.out + r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(r.out).get(root) != simdjson::SUCCESS) return v;
  bool sound = false;
  if (root["sound"].get_bool().get(sound) == simdjson::SUCCESS) v.sound = sound;
  simdjson::dom::array problems;
  if (root["problems"].get_array().get(problems) == simdjson::SUCCESS) {
    for (auto p : problems) {
      VerifyProblem q;
      q.kind = std::string(p["kind"].get_string().value_unsafe());
      q.shard = std::string(p["shard"].get_string().value_unsafe());
      q.tensor = std::string(p["tensor"].get_string().value_unsafe());
      q.layer = p["layer"].get_int64().value_unsafe();
      q.expert = p["expert"].get_int64().value_unsafe();
      q.line = std::string(p["line"].get_string().value_unsafe());
      v.problems.push_back(std::move(q));
    }
  }
  return v;
}

}  // namespace k3test::container
