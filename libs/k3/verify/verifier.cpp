#include "k3/verify/verifier.h"

#include <chrono>

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
  ContainerFacts facts = checkContainer(dst, report, opts.spread);

  HashOptions hopts;
  hopts.threads = opts.threads;
  hopts.blockBytes = opts.blockBytes;
  hopts.io = opts.io;
  if (opts.progress) {
    hopts.progress = opts.progress;
    uint64_t total = 0;
    if (opts.full) total += containerHashBytes(facts);
    if (!opts.source.empty()) total += sourceHashBytes(facts);
    opts.progress->setTotal(total);
  }
  uint64_t hashed = 0;
  if (opts.full) hashed += hashContainer(facts, hopts, report);
  if (!opts.source.empty()) {
    const SourceIndex source = scanSource(opts.source, report);
    hashed += hashSource(opts.source, source, facts, hopts, report);
    hashed += compareDenseWithSource(source, facts, hopts, report);
  }
  report.summary().bytesHashed = hashed;
  report.sort();
  report.summary().seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace k3::verify
