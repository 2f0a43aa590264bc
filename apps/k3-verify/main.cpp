// k3-verify DST [--full] [--source SRC] [--threads N] [--json]
// Checks a repacked K3 container; exit 0 = sound, 1 = problems, 2 = could not
// run (usage, DST unreadable, or a file in it could not be read).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "k3/io/json_text.h"
#include "k3/io/error.h"
#include "k3/io/thread_pool.h"
#include "k3/verify/verifier.h"

namespace {

// Redraws one stderr line a few times a second while hashing runs.
class ProgressBar {
 public:
  explicit ProgressBar(const k3::verify::VerifyProgress& p) : p_(p), thread_([this] { loop(); }) {}
  ~ProgressBar() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  void loop() {
    const auto t0 = std::chrono::steady_clock::now();
    bool drawn = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stop_; })) {
      const double total = static_cast<double>(p_.total.load()), done = static_cast<double>(p_.done.load());
      if (total <= 0) continue;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = secs > 0 ? done / secs : 0, frac = done / total;
      const int width = 30, filled = static_cast<int>(frac * width);
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(width, ' ');
      std::fprintf(stderr, "\r[%s] %5.1f%% %.2f/%.2f GB %.2f GB/s ETA %.0fs   ", bar.c_str(), 100 * frac,
                   done / 1e9, total / 1e9, rate / 1e9, rate > 0 ? (total - done) / rate : 0.0);
      drawn = true;
    }
    if (drawn) std::fprintf(stderr, "\r%80s\r", "");
  }

  const k3::verify::VerifyProgress& p_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"k3-verify: check a repacked K3 container (headers, tensors, manifest; --full: SHA-256)"};
  app.set_version_flag("--version", std::string("k3-verify ") + K3KIT_VERSION);
  std::string dst, source;
  bool full = false, json = false;
  long long threads = 0;  // signed: -1 must be refused, not read as 2^64-1
  app.add_option("DST", dst, "container directory written by k3-repack")->required();
  app.add_flag("--full", full, "re-read every byte: SHA-256 of each expert and shard vs the manifest");
  app.add_option("--source", source, "also hash the source snapshot's expert bytes against the manifest");
  CLI::Option* threadsOpt = app.add_option("--threads", threads, "hashing threads (default: all cores)");
  app.add_flag("--json", json, "print a machine-readable report on stdout");
  std::string io = "auto";
  app.add_option("--io", io, "--full reads: direct (O_DIRECT), buffered, or auto (direct unless cached)")
      ->check(CLI::IsMember({"auto", "buffered", "direct"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  k3::verify::VerifyOptions opts;
  opts.full = full;
  opts.source = source;
  opts.io = io == "direct" ? k3::verify::IoMode::Direct
            : io == "buffered" ? k3::verify::IoMode::Buffered
                               : k3::verify::IoMode::Auto;
  k3::verify::VerifyProgress progress;
  const bool hashing = full || !source.empty();
  if (hashing && ::isatty(STDERR_FILENO)) opts.progress = &progress;
  try {
    if (threadsOpt->count()) opts.threads = k3::checkThreadCount(threads);
    k3::verify::VerifyReport report;
    {
      std::optional<ProgressBar> bar;
      if (opts.progress) bar.emplace(progress);
      report = k3::verify::verifyContainer(dst, opts);
    }
    if (json) std::cout << report.json();
    else std::cout << report.text();
    if (report.incomplete()) return 2;  // something could not be read: not a verdict
    return report.sound() ? 0 : 1;
  } catch (const k3::Error& e) {
    std::cerr << "k3-verify: [" << k3::errorKindName(e.kind()) << "] " << e.what() << "\n";
    if (json)
      std::cout << "{\"sound\":false,\"error\":{\"kind\":" << k3::jsonString(k3::errorKindName(e.kind()))
                << ",\"message\":" << k3::jsonString(e.what()) << "}}\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "k3-verify: [internal] " << e.what() << "\n";
    return 2;
  }
}
