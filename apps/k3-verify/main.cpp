// k3-verify DST [--full] [--source SRC] [--spread DIR2,...] [--threads N] [--json]
// Checks a repacked K3 container; exit 0 = sound, 1 = problems, 2 = could not
// run (usage, DST unreadable, or a file in it could not be read), as diff
// does. An error is the apps' one line on stderr and, with --json, their
// error object with "sound": false added.
#include <CLI/CLI.hpp>
#include "../cli_parse.h"
#include <iostream>

#include "k3/format/spread_layout.h"
#include "k3/io/error.h"
#include "k3/io/page_cache.h"
#include "k3/io/progress_meter.h"
#include "k3/io/thread_pool.h"
#include "k3/verify/verifier.h"

int main(int argc, char** argv) {
  CLI::App app{"k3-verify: check a repacked K3 container (headers, tensors, manifest; --full: SHA-256)"};
  app.set_version_flag("--version", std::string("k3-verify ") + K3KIT_VERSION);
  std::string dst, source;
  bool full = false, json = false;
  long long threads = 0;  // signed: -1 must be refused, not read as 2^64-1
  app.add_option("DST", dst, "container directory written by k3-repack")->required();
  app.add_flag("--full", full, "re-read every byte: SHA-256 of each expert and shard vs the manifest");
  app.add_option("--source", source, "also hash the source snapshot's expert bytes against the manifest (default: no source)")
      ->option_text("SRC");
  CLI::Option* threadsOpt = app.add_option("--threads", threads, "hashing threads (default: all cores)");
  app.add_flag("--json", json, "print a machine-readable report on stdout");
  std::string spread;
  app.add_option("--spread", spread,
                 "a spread container's other directories, in order, where they are now (default: as recorded)")
      ->option_text("DIR2[,DIR3...]");
  std::string io = "auto";
  app.add_option("--io", io, "--full reads: direct (O_DIRECT), buffered, or auto (direct unless cached)")
      ->check(CLI::IsMember({"auto", "buffered", "direct"}));
  // Every error is "could not run" (2): 1 is the verdict "problems found".
  const k3app::ErrorPolicy errors{.app = "k3-verify",
                                  .json = [&] { return json; },
                                  .usageExit = 2,
                                  .errorExit = 2,
                                  .extendJson = [](k3::JsonObject& j) { j.add("sound", false); }};
  if (const auto rc = k3app::parseCommandLine(app, errors, argc, argv)) return *rc;

  k3::verify::VerifyOptions opts;
  opts.full = full;
  opts.source = source;
  const bool hashing = full || !source.empty();
  k3::ProgressMeter progress(0, hashing && k3::stderrIsTerminal());
  opts.progress = &progress;
  return k3app::runReportingErrors(errors, [&] {
    opts.io = k3::parseReadMode(io);
    if (threadsOpt->count()) opts.threads = k3::checkThreadCount(threads);
    if (!spread.empty()) opts.spread = k3::parseSpreadDirs(spread);
    const k3::verify::VerifyReport report = k3::verify::verifyContainer(dst, opts);
    progress.finish();
    if (json) std::cout << report.json();
    else std::cout << report.text();
    if (report.incomplete()) return 2;  // something could not be read: not a verdict
    return report.sound() ? 0 : 1;
  });
}
