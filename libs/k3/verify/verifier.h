// verifyContainer: the whole k3-verify run (fast checks, then optionally the
// --full hash pass and the --source pass) producing one VerifyReport.
// Thread-safety: verifyContainer shares nothing between calls; a run uses its
// own pool (VerifyOptions::threads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "k3/verify/hash_pass.h"
#include "k3/verify/verify_report.h"

namespace k3::verify {

struct VerifyOptions {
  bool full = false;           // SHA-256 of every shard and expert
  std::string source;          // non-empty: also hash the source's experts
  std::vector<std::string> spread;  // a spread container's other roots, where they are now (else as recorded)
  size_t threads = 0;          // 0 = all cores
  size_t blockBytes = size_t{4} << 20;
  ReadMode io = ReadMode::Auto;    // how --full reads the shards
  ProgressMeter* progress = nullptr;  // gets the bytes to hash, then each block hashed
};

// Throws k3::Error only if the run cannot happen (DST unreadable, SRC not a
// directory); every defect of the container is a Problem in the report.
VerifyReport verifyContainer(const std::string& dst, const VerifyOptions& opts);

}  // namespace k3::verify
