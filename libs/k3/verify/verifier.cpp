#include "k3/verify/verifier.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "k3/verify/container_checker.h"
#include "k3/verify/hash_pass.h"
#include "k3/verify/source_dense.h"
#include "k3/verify/source_index.h"

namespace k3::verify {

VerifyReport verifyContainer(const std::string& dst, const VerifyOptions& opts) {
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
