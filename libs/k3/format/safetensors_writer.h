// SafetensorsWriter: streams one spec-valid safetensors file (spec §3.3).
//
// The caller declares every tensor (name, dtype, shape) up front, so the
// header and every data offset are fixed before the first data byte: the
// header is compact ASCII JSON in declared order, space-padded so the data
// section starts at a multiple of 8, and tensors are laid back to back with
// no hole. Data is then streamed strictly sequentially (reserve/commit or
// write) into large aligned chunks; a small pipeline hashes each chunk
// (SHA-256 of the whole file, plus an optional observer callback in file
// order) and writes it with O_DIRECT positional writes from several I/O
// threads (queue depth without io_uring). Everything goes to `<final>.tmp`;
// finish() checks the byte count, truncates to the exact size, fsyncs and
// renames. A writer destroyed before finish() removes its temp file.
//
// Thread-compatible: one producer thread per writer. A WriteBufferPool may be
// shared by consecutive writers (not by two live writers at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "k3/format/dtype.h"
#include "k3/io/aligned_buffers.h"
#include "k3/io/phase_time.h"

namespace k3 {

struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<uint64_t> shape;
  uint64_t nbytes() const;  // numel x dtype size (exact)
};

// Aligned chunk buffers reused across writers (first touch of fresh memory is
// slow on this VM, so they are allocated once per run).
class WriteBufferPool {
 public:
  static constexpr size_t kAlign = AlignedBuffers::kAlign;
  // At least 2 chunks; out of memory is an Internal error.
  WriteBufferPool(size_t chunkBytes = size_t{8} << 20, size_t chunkCount = 8);
  size_t chunkBytes() const { return chunks_.bytesEach(); }
  size_t chunkCount() const { return chunks_.count(); }
  uint8_t* buffer(size_t i) const { return chunks_.at(i); }
  size_t totalBytes() const { return chunkBytes() * chunkCount(); }

 private:
  AlignedBuffers chunks_;
};

// Where a writer's time goes (--json phase breakdowns): each stage summed
// over the threads that run it.
struct WriterPhases {
  PhaseTime freeWait;  // producer blocked in reserve() for a free chunk (the pipeline is behind)
  PhaseTime hash;      // the writer's own SHA-256 of the file (hashFile)
  PhaseTime observe;   // the observer callback (the repacker's shard + expert digests)
  PhaseTime write;     // pwrite of chunks, summed over the I/O threads
  PhaseTime drain;     // finish(): producer waits for the pipeline to empty
  PhaseTime sync;      // finish(): fdatasync of the file
};

class SafetensorsWriter {
 public:
  struct Options {
    bool directIo = true;     // O_DIRECT; silently falls back to buffered where unsupported
    size_t ioThreads = 2;     // concurrent positional writes
    WriteBufferPool* pool = nullptr;  // null: the writer owns a default pool
    // Called for every byte range of the file in order, on a pipeline thread,
    // after the SHA-256 stage: (absolute file offset, bytes, length).
    std::function<void(uint64_t, const uint8_t*, size_t)> observer;
    std::string tempPath;     // default: <final>.tmp
    // false: skip the writer's own SHA-256 (sha256Hex() stays empty), for
    // callers whose observer hashes the file together with other digests.
    bool hashFile = true;
    WriterPhases* phases = nullptr;  // null: not measured
  };

  SafetensorsWriter(std::string finalPath, std::vector<TensorSpec> tensors, Options options);
  SafetensorsWriter(std::string finalPath, std::vector<TensorSpec> tensors);
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // 8-byte length + padded JSON for `tensors` laid out back to back.
  static std::string encodeHeader(const std::vector<TensorSpec>& tensors);

  const std::string& path() const { return finalPath_; }
  const std::string& tempPath() const { return tempPath_; }
  uint64_t headerSize() const { return header_.size(); }  // = data offset (8 + N)
  uint64_t fileSize() const { return fileSize_; }
  // Absolute file offset of the first byte of tensor i.
  uint64_t tensorOffset(size_t i) const { return offsets_[i]; }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  uint64_t written() const { return written_; }  // file bytes streamed so far (header included)

  // A writable span at the current position, 1..min(maxBytes, remaining)
  // bytes; valid until the next call. Fill it, then commit(n ≤ its size).
  std::span<uint8_t> reserve(size_t maxBytes);
  void commit(size_t n);
  void write(const void* data, size_t n);

  // Verifies every declared byte was streamed, drains the pipeline, truncates
  // to the exact size, fsyncs, renames to the final path, fsyncs the directory.
  void finish();
  // Stops the pipeline and removes the temp file (idempotent; no throw).
  void abort() noexcept;
  const std::string& sha256Hex() const { return sha256_; }  // after finish(), if hashFile

 private:
  struct Pipeline;
  void submitCurrent();

  std::string finalPath_, tempPath_;
  std::vector<TensorSpec> tensors_;
  std::vector<uint64_t> offsets_;
  std::string header_;
  uint64_t fileSize_ = 0;
  uint64_t written_ = 0;
  std::string sha256_;
  std::unique_ptr<WriteBufferPool> ownedPool_;
  std::unique_ptr<Pipeline> pipe_;
};

}  // namespace k3
