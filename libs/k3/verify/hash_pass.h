// The --full and --source passes of k3-verify: SHA-256 of every container
// shard and every expert (against k3-manifest.json), and of every expert's
// bytes in the source snapshot. Files are read with pread into reused large
// buffers (no mmap: page faults cost ~3 µs/page on these VMs) and spread over
// all threads, one file (container) or expert run (source) per job.
// Thread-safety: each pass runs its own pool and adds to opts.progress
// (thread-safe) from it; call from one thread with a report nobody else is
// writing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "k3/io/page_cache.h"
#include "k3/io/phase_time.h"
#include "k3/io/progress_meter.h"
#include "k3/verify/container_checker.h"
#include "k3/verify/source_index.h"
#include "k3/verify/verify_report.h"

namespace k3::verify {


// Where the hash passes' time goes (k3-verify --json "phases"), summed over
// the hashing threads.
struct HashPhases {
  PhaseTime readWait;  // a hashing thread waiting for its next block (the disk is behind)
  PhaseTime hash;      // SHA-256 of the block (shard + expert digests) and the expert checks
};

struct HashOptions {
  size_t threads = 0;                        // 0 = all cores
  size_t blockBytes = size_t{4} << 20;       // sequential read size
  ReadMode io = ReadMode::Auto;  // how shards are read (io/page_cache.h)
  ProgressMeter* progress = nullptr;         // bytes hashed are added (may be null)
  HashPhases* phases = nullptr;              // null: not measured
};

// Bytes the container pass will read (whole shards listed in the manifest).
uint64_t containerHashBytes(const ContainerFacts& facts);

// Hashes each shard the manifest lists, whole and per expert, in one
// sequential read; appends Hash / Unreadable problems. Returns bytes read.
uint64_t hashContainer(const ContainerFacts& facts, const HashOptions& opts, VerifyReport& report);

// Hashes the source snapshot's bytes of every manifest expert (its six
// tensors in container order) and compares with the manifest; appends
// Source / Unreadable problems. Returns bytes read.
uint64_t hashSource(const std::string& srcDir, const SourceIndex& source, const ContainerFacts& facts,
                    const HashOptions& opts, VerifyReport& report);

}  // namespace k3::verify

namespace k3::verify {
// Bytes the source pass will read (every manifest expert once).
uint64_t sourceHashBytes(const ContainerFacts& facts);
}  // namespace k3::verify
