#include "k3/verify/verifier.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "k3/format/expert_manifest.h"
#include "k3/format/snapshot.h"
#include "k3/io/error.h"
#include "k3/verify/container_checker.h"
#include "k3/verify/hash_pass.h"
#include "k3/verify/source_dense.h"
#include "k3/verify/source_index.h"

namespace k3::verify {

// A Hugging Face snapshot given as DST (no manifest, nothing of a k3-repack run,
// and it opens as k3-repack's source would) is one line saying so, with the
// command that converts it, not a problem per missing container feature.
static void refuseRawSnapshot(const std::string& dst) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::path(dst) / ExpertManifest::kFileName, ec) || fs::exists(fs::path(dst) / ExpertManifest::kPartsDir, ec) ||
      !fs::is_regular_file(fs::path(dst) / Snapshot::kIndexName, ec))
    return;
  try {
    Snapshot::open(dst);
  } catch (const Error&) {
    return;  // not a readable snapshot either: the container checks say what is wrong
  }
  fail(ErrorKind::Usage, dst, ": a Hugging Face snapshot, not a k3kit container (no ", ExpertManifest::kFileName,
       "); convert it first: k3-repack ", dst, " DST --bits 8");
}

VerifyReport verifyContainer(const std::string& dst, const VerifyOptions& opts) {
  refuseRawSnapshot(dst);
  const auto t0 = std::chrono::steady_clock::now();
  VerifyReport report;
  report.summary().mode = opts.full ? "full" : "fast";
  if (!opts.source.empty()) report.summary().mode += "+source";
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  VerifySummary::Phases& ph = report.summary().phases;
  ContainerFacts facts = checkContainer(dst, report, opts.spread);
  ph.check = since(t0);

  HashOptions hopts;
  hopts.threads = opts.threads;
  hopts.blockBytes = opts.blockBytes;
  hopts.io = opts.io;
  HashPhases phases;
  hopts.phases = &phases;
  if (opts.progress) {
    hopts.progress = opts.progress;
    uint64_t total = 0;
    if (opts.full) total += containerHashBytes(facts);
    if (!opts.source.empty()) total += sourceHashBytes(facts);
    opts.progress->setTotal(total);
  }
  uint64_t hashed = 0;
  const auto t1 = Clock::now();
  if (opts.full) hashed += hashContainer(facts, hopts, report);
  ph.hashWall = since(t1);
  const auto t2 = Clock::now();
  if (!opts.source.empty()) {
    const SourceIndex source = scanSource(opts.source, report);
    hashed += hashSource(opts.source, source, facts, hopts, report);
    hashed += compareDenseWithSource(source, facts, hopts, report);
  }
  ph.sourceWall = since(t2);
  ph.readWait = phases.readWait.seconds();
  ph.hash = phases.hash.seconds();
  report.summary().threads = opts.threads ? opts.threads : std::max(1u, std::thread::hardware_concurrency());
  report.summary().bytesHashed = hashed;
  report.sort();
  report.summary().seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace k3::verify
