// ShardConverter: streams one output shard from its source shard following a
// ShardPlan. Every source byte is read once, in output order: the dense
// tensors in file order, then each expert's six back-to-back tensors as one
// span (K3: 17.5 MB). A PlannedReader knows that order up front and keeps
// O_DIRECT requests in flight ahead of the producer (or, for a source the
// page cache holds, the producer preads it with readahead hints). The
// producer (calling thread) copies into the writer's aligned chunks (or into
// a row-block buffer that the thread pool quantizes); the writer pipeline
// hashes (whole file + each expert's bytes) and writes with O_DIRECT from its
// own threads, so reading, quantizing, hashing and writing overlap.
// Memory is fixed at construction (see docs/CONTAINER.md, "Resource bounds").
// Thread-compatible: one shard at a time per converter.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "k3/convert/shard_plan.h"
#include "k3/format/expert_manifest.h"
#include "k3/format/safetensors_writer.h"
#include "k3/io/page_cache.h"
#include "k3/io/planned_reader.h"
#include "k3/io/progress_meter.h"
#include "k3/io/thread_pool.h"

namespace k3::convert {

// Where a conversion's time goes (k3-repack --json "phases"), summed over
// every shard converted; stages run by several threads are summed over them.
struct ConvertPhases {
  PlannedReadPhases read;  // producer waiting for source bytes; reader threads' preads
  PhaseTime quantize;      // BF16 -> f32 + int4/int8 quantization, summed over the pool's threads
  PhaseTime quantizeWall;  // producer waiting for each quantized row block (the fork-join)
  PhaseTime floatScan;     // NaN / Inf scan of float tensors on the producer
  std::atomic<uint64_t> readRequests{0};   // direct reads issued
  std::atomic<uint64_t> directShards{0};   // shards whose source was read with O_DIRECT
  WriterPhases writer;     // free-chunk wait, hash (observer), pwrite, drain, fdatasync
};

struct ConverterOptions {
  size_t threads = 0;          // quantization threads (0 = all cores)
  size_t ioThreads = 2;        // concurrent O_DIRECT writes
  bool directIo = true;        // O_DIRECT writes
  ReadMode sourceIo = ReadMode::Auto;  // how source shards are read (page_cache.h)
  size_t readBlockBytes = size_t{8} << 20;  // most bytes per direct source read
  size_t readDepth = 2;        // direct source reads in flight
  size_t chunkBytes = size_t{8} << 20;
  size_t chunkCount = 8;
  size_t rowBlockBytes = size_t{16} << 20;  // BF16 source bytes per quantization block
  // Called on the producer thread after every source read / quantized block
  // (crash tests kill the process from here at chosen points).
  std::function<void()> tick;
  // Set by another job that failed: convert() stops at its next read (Internal).
  const std::atomic<bool>* stop = nullptr;
  ConvertPhases* phases = nullptr;  // null: not measured
};

class ShardConverter {
 public:
  explicit ShardConverter(ConverterOptions options);
  ~ShardConverter();

  // Writes dstDir/plan.outputFile atomically (temp file, fsync, rename) and
  // returns its manifest entry. On any error the temp file is removed and
  // nothing is published. Throws k3::Error (NoSpace when the disk is full).
  ManifestShard convert(const ShardPlan& plan, const std::string& dstDir, ProgressMeter& progress);
  // Of the last convert(): expert scale bytes equal to 0 or 255 (spec §4 edge cases).
  struct Stats {
    uint64_t scaleEdgeBytes = 0;
  };
  const Stats& lastStats() const { return stats_; }

 private:
  void stopIfAsked(const std::string& what) const;
  void quantize(const PlanStep& step, PlannedReader& in, const std::string& srcPath, SafetensorsWriter& w,
                ProgressMeter& progress);

  ConverterOptions opt_;
  WriteBufferPool pool_;
  PlannedReadBuffers readBuffers_;
  ThreadPool threads_;
  std::vector<uint16_t> bf16_;             // one row block of source
  std::vector<uint8_t> qbuf_;              // its quantized rows
  std::vector<std::vector<float>> rowF32_; // per-thread f32 row
  std::vector<float> scales_;              // sidecar of the current tensor
  Stats stats_;
};

}  // namespace k3::convert
