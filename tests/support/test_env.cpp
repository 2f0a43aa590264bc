#include "support/test_env.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace k3test {

static std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
}

std::string sourceDir() { return envOr("K3_SOURCE_DIR", K3_SOURCE_DIR); }
std::string kimiDataDir() { return sourceDir() + "/tests/data/kimi"; }
std::string binDir() { return envOr("K3_BIN_DIR", K3_BIN_DIR); }
std::string testTmp() {
  std::string t = envOr("K3_TEST_TMP", K3_TEST_TMP);
  fs::create_directories(t);
  return t;
}

std::string freshDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  fs::path p = fs::path(testTmp()) / "scratch" /
               (tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

static std::string slurpFd(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

RunResult run(const std::vector<std::string>& argv, const RunOptions& opts) {
  // Capture stdout/stderr through temp files: no pipe deadlocks, no threads.
  std::string base = freshDir("run");
  std::string outPath = base + "/stdout", errPath = base + "/stderr";
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int o = ::open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (!opts.stdinPath.empty()) {
      const int i = ::open(opts.stdinPath.c_str(), O_RDONLY);
      if (i >= 0) ::dup2(i, 0);
    }
    if (opts.fileSizeLimit) {
      const struct rlimit rl{static_cast<rlim_t>(opts.fileSizeLimit), static_cast<rlim_t>(opts.fileSizeLimit)};
      ::setrlimit(RLIMIT_FSIZE, &rl);
    }
    for (const auto& kv : opts.env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (opts.killAfterMs >= 0) {
    ::usleep(static_cast<useconds_t>(opts.killAfterMs) * 1000);
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  RunResult r;
  struct rusage ru {};
  if (opts.timeoutMs >= 0) {
    for (int waited = 0;; waited += 5) {
      if (::wait4(pid, &status, WNOHANG, &ru) == pid) break;
      if (waited >= opts.timeoutMs) {
        ::kill(pid, SIGKILL);
        ::wait4(pid, &status, 0, &ru);
        r.timedOut = true;
        break;
      }
      ::usleep(5000);
    }
  } else {
    ::wait4(pid, &status, 0, &ru);
  }
  r.maxRssKb = ru.ru_maxrss;
  if (WIFEXITED(status)) r.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  int fo = ::open(outPath.c_str(), O_RDONLY), fe = ::open(errPath.c_str(), O_RDONLY);
  r.out = slurpFd(fo);
  r.err = slurpFd(fe);
  ::close(fo);
  ::close(fe);
  fs::remove_all(base);
  return r;
}

RunResult runTool(const std::string& tool, const std::vector<std::string>& args) {
  std::vector<std::string> argv{binDir() + "/" + tool};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

std::string synthSnapshot(const std::string& preset, uint64_t seed) {
  fs::path dir = fs::path(testTmp()) / "synth" / (preset + "-s" + std::to_string(seed));
  if (fs::exists(dir / "model.safetensors.index.json")) return dir.string();
  fs::create_directories(dir.parent_path());
  // Generate into a private temp dir, then rename: concurrent callers race
  // harmlessly (the loser discards its copy).
  fs::path tmp = dir.string() + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  RunResult r = run({"/usr/bin/python3", sourceDir() + "/scripts/k3_synth.py", "--preset", preset,
                     "--seed", std::to_string(seed), "--out", tmp.string()});
  if (r.exitCode != 0)
    throw std::runtime_error("k3_synth.py failed: " + r.err);
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);
  if (!fs::exists(dir / "model.safetensors.index.json"))
    throw std::runtime_error("synthetic snapshot missing after generation: " + dir.string());
  return dir.string();
}

}  // namespace k3test
