// Repacker: the k3-repack conversion (docs/CONTAINER.md). Opens and checks
// the source snapshot, converts each text shard that is not already done
// (resume = shard file + matching fragment), then finalizes: copies the
// config/tokenizer/generation files, rebuilds the index (spec §5.7) and
// merges the fragments into k3-manifest.json, written last.
// A killed run leaves only complete files under final names; a rerun with
// the same settings finishes byte-identical to an uninterrupted run.
// Thread-safety: repack() shares nothing between calls (its converter runs its
// own threads); a second run on the same DST is refused by DstLock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "k3/convert/shard_converter.h"
#include "k3/convert/shard_plan.h"

namespace k3::convert {

struct RepackOptions {
  std::string src, dst;
  int bits = 8;
  int mlaBits = 0;   // 0 = default max(bits, 8)
  int headBits = 0;  // 0 = default max(bits, 8)
  std::vector<int> shards;  // source shard numbers; empty = all (and finalize)
  bool finalizeOnly = false;
  bool dryRun = false;
  // --spread: more directories (one per drive) the shard files are spread
  // over with DST, each layer's experts cut across all of them (docs/CONTAINER.md).
  std::vector<std::string> spread;
  bool dropUnknown = false;  // leave out text tensors config.json does not imply (else refused)
  bool progress = false;     // draw the bar (the CLI passes isatty(stderr))
  // Shards converted at once, each by its own converter (memory per job:
  // docs/CONTAINER.md, "Resource bounds"); converter.threads are shared out.
  size_t jobs = 1;
  ConverterOptions converter;
  std::function<void(const std::string&)> log;  // human messages (may be empty)
};

struct ShardStatus {
  std::string output;
  std::string source;
  uint64_t size = 0;
  uint64_t experts = 0;
  uint64_t quantized = 0;
  enum class State { Converted, Skipped, Planned } state = State::Planned;
  uint64_t tensors = 0;  // in the output file (sidecars included)
};

// Seconds per stage of the run (--json "phases"; issue 22). Stages on several
// threads (quantize, write) are summed over them, so they can exceed `seconds`.
struct RepackPhases {
  double open = 0;          // opening and checking the snapshot (headers, index, tokenizer)
  double plan = 0;          // per-shard planning and the resume checks (per-tensor bookkeeping)
  double readWait = 0;      // producers waiting for source bytes (their preads, or the direct reads ahead)
  double read = 0;          // direct source reads, summed over the reader threads
  double floatScan = 0;     // NaN / Inf scans of float tensors
  double quantize = 0;      // BF16 -> int4/int8, summed over threads
  double quantizeWall = 0;  // producer waiting for the quantize fork-joins
  double writeWait = 0;     // producer waiting for a free write chunk (hash or writes are behind)
  double hash = 0;          // shard + expert SHA-256 on the writer's pipeline thread
  double write = 0;         // O_DIRECT pwrite, summed over the I/O threads
  double drain = 0;         // end of each shard: waiting for the pipeline to empty
  double sync = 0;          // fdatasync of each shard
  double manifest = 0;      // fragments, copied files, index and manifest (finalize)
  uint64_t reads = 0;         // direct source read requests
  uint64_t directShards = 0;  // shards whose source was read with O_DIRECT (the rest: buffered, cached)
};

struct RepackSummary {
  std::vector<ShardStatus> shards;
  RepackPhases phases;
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;
  uint64_t scaleEdgeBytes = 0;  // expert ue8m0 scales equal to 0 or 255 (spec §4)
  double seconds = 0;
  bool finalized = false;
  BitSettings bits;
  int textShards = 0;
  std::string toJson(const RepackOptions& opt) const;
  // The one human summary line: "k3-repack: DST: N shards (C converted, S
  // already done), T tensors, B bytes written, X.XX s" (+ what is left when
  // --shards did not finalize).
  std::string textLine(const RepackOptions& opt) const;
};

// Parses "1,3,5-9" into sorted shard numbers; throws Usage on bad syntax or
// repeated numbers.
std::vector<int> parseShardList(const std::string& list);

RepackSummary repack(const RepackOptions& options);

}  // namespace k3::convert
