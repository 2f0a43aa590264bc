// k3-repack: converts a Kimi K3 HF snapshot into the k3kit container
// (docs/CONTAINER.md). Thin CLI over k3::convert::repack().
#include <CLI/CLI.hpp>
#include "../cli_parse.h"
#include "../isa_option.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <thread>

#include "k3/convert/repacker.h"
#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/page_cache.h"
#include "k3/io/progress_meter.h"
#include "k3/io/thread_pool.h"

int main(int argc, char** argv) {
  // Writes past RLIMIT_FSIZE must fail with EFBIG (reported as NoSpace), not kill us.
  std::signal(SIGXFSZ, SIG_IGN);

  k3::convert::RepackOptions opt;
  std::string shards;
  long long threads = 0;  // signed: -1 must be refused, not read as 2^64-1
  bool json = false;
  CLI::App app{"k3-repack: convert a Kimi K3 HF snapshot into a k3kit container (resumable)"};
  app.set_version_flag("--version", std::string("k3-repack ") + K3KIT_VERSION);
  app.add_option("SRC", opt.src, "source HF snapshot directory")->required();
  app.add_option("DST", opt.dst, "output container directory")->required();
  app.add_option("--bits", opt.bits, "bit width of the large matrices: 4, 8 or 16 (16 = keep BF16)")
      ->check(CLI::IsMember({4, 8, 16}));
  app.add_option("--mla-bits", opt.mlaBits, "bit width of MLA projections (default max(bits, 8))")
      ->check(CLI::IsMember({4, 8, 16}));
  app.add_option("--head-bits", opt.headBits, "bit width of lm_head (default max(bits, 8))")
      ->check(CLI::IsMember({4, 8, 16}));
  std::string spread;
  app.add_option("--spread", spread,
                 "spread the shard files over DST and these directories (DIR2[,DIR3...], one per drive): "
                 "each layer's experts are cut across all of them (default: none, all in DST)")
      ->option_text("DIR2[,DIR3...]");
  CLI::Option* shardsOpt = app.add_option("--shards", shards,
                 "convert only these source shards (e.g. 1-40,45); finalize later with --finalize (default: all, then finalize)")
      ->option_text("LIST");
  CLI::Option* threadsOpt = app.add_option("--threads", threads, "quantization threads (default: all cores)");
  long long jobs = 0;
  CLI::Option* jobsOpt = app.add_option(
      "--jobs", jobs, "shards converted at once, each with its own reader, writer and hash thread (default: cores, at most 4)");
  app.add_flag("--json", json, "print a machine-readable summary on stdout");
  app.add_flag("--dry-run", opt.dryRun, "check the source and show the plan; write nothing");
  app.add_flag("--drop-unknown", opt.dropUnknown,
               "leave out text tensors config.json does not imply (default: refuse the source)");
  app.add_flag("--finalize", opt.finalizeOnly,
               "only merge: copy files, rebuild the index, write k3-manifest.json");
  std::string io = "auto";
  app.add_option("--io", io, "source reads: direct (O_DIRECT), buffered, or auto (direct unless cached)")
      ->check(CLI::IsMember({"auto", "buffered", "direct"}));
  std::string isa;
  k3app::addIsaOption(app, isa);
  const k3app::ErrorPolicy errors{.app = "k3-repack", .json = [&] { return json; }};
  if (const auto rc = k3app::parseCommandLine(app, errors, argc, argv)) return *rc;

  const bool tty = k3::stderrIsTerminal();
  opt.progress = tty && !opt.dryRun;
  // Crash tests: SIGKILL ourselves at the N-th converter event (source read,
  // quantized block, shard published, fragment written, finalize step).
  if (const char* k = std::getenv("K3_REPACK_TEST_KILL_AFTER")) {
    const long n = std::atol(k);
    auto count = std::make_shared<std::atomic<long>>(0);  // --jobs: ticks come from several threads
    opt.converter.tick = [n, count] {
      if (++*count == n) std::raise(SIGKILL);
    };
  }
  if (tty) opt.log = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  return k3app::runReportingErrors(errors, [&] {
    k3app::applyIsaChoice(isa);
    opt.converter.sourceIo = k3::parseReadMode(io);
    const size_t cores = std::max(1u, std::thread::hardware_concurrency());
    opt.converter.threads = threadsOpt->count() ? k3::checkThreadCount(threads) : cores;
    opt.jobs = jobsOpt->count() ? k3::checkThreadCount(jobs, "--jobs") : std::min<size_t>(cores, 4);
    if (shardsOpt->count()) opt.shards = k3::convert::parseShardList(shards);  // "" is refused, not "all"
    if (!spread.empty()) opt.spread = k3::parseSpreadDirs(spread);
    if (opt.finalizeOnly && !opt.shards.empty())
      k3::fail(k3::ErrorKind::Usage, "--finalize and --shards are exclusive");
    k3::convert::RepackSummary sum = k3::convert::repack(opt);
    if (json) {
      std::cout << sum.toJson(opt) << "\n";
    } else if (!opt.dryRun) {
      std::cout << sum.textLine(opt) << "\n";
    } else {
      for (const auto& s : sum.shards)
        std::printf("%s <- %s  %llu bytes, %llu experts, %llu quantized  %s\n", s.output.c_str(),
                    s.source.c_str(), static_cast<unsigned long long>(s.size),
                    static_cast<unsigned long long>(s.experts),
                    static_cast<unsigned long long>(s.quantized),
                    s.state == k3::convert::ShardStatus::State::Skipped ? "done" : "to do");
    }
    return 0;
  });
}
