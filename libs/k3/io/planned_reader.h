// PlannedReader: one file's byte ranges, read in an order known up front (a
// shard plan), for one consumer that takes the bytes back to back.
//
// Direct mode: the ranges are merged where they touch, cut into requests of
// at most blockBytes on 4 KiB boundaries, and `depth` threads read them
// ahead with O_DIRECT into a ring of depth + 1 aligned buffers, so `depth`
// requests are in flight while the consumer copies the oldest one out (see
// page_cache.h for why not through the page cache). Buffered mode (a file
// the page cache already holds, or a file system without O_DIRECT): the
// consumer preads itself, with WILLNEED hints a window ahead, since the
// ranges come in plan order, not file order, and the kernel's own readahead
// would miss them.
//
// Memory is fixed by the options: (depth + 1) x (blockBytes + 8 KiB).
// Thread-safety: one consumer thread calls read(); the reader threads are
// its own.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k3/io/aligned_buffers.h"
#include "k3/io/phase_time.h"

namespace k3 {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// The request ring of a PlannedReader: depth + 1 aligned slots of a
// request plus the 4 KiB it may start early and end late, allocated once
// and reused for every file.
class PlannedReadBuffers {
 public:
  static constexpr size_t kAlign = AlignedBuffers::kAlign;
  PlannedReadBuffers(size_t blockBytes, size_t depth);
  size_t blockBytes() const { return blockBytes_; }   // most bytes of one request
  size_t depth() const { return slots_.count() - 1; }  // requests in flight
  uint8_t* slot(size_t i) const { return slots_.at(i); }

 private:
  size_t blockBytes_;
  AlignedBuffers slots_;
};

struct PlannedReadPhases {
  PhaseTime wait;  // the consumer in read(): its own preads, or waiting for a request (the disk is behind)
  PhaseTime io;    // direct mode: pread time summed over the reader threads
};

class PlannedReader {
 public:
  // Reads `ranges` of the open file `fd` (named `path` in errors; `size`
  // bytes, every range inside it) in the given order. direct: try O_DIRECT
  // (on this descriptor: the caller must not read it meanwhile); a file
  // system that refuses it is read buffered. `buffers` must outlive the
  // reader and serve one live reader at a time. The descriptor's flags are
  // restored when the reader is destroyed.
  PlannedReader(int fd, std::string path, uint64_t size, std::vector<ByteRange> ranges, bool direct,
                PlannedReadBuffers& buffers, PlannedReadPhases* phases = nullptr);
  ~PlannedReader();
  PlannedReader(const PlannedReader&) = delete;
  PlannedReader& operator=(const PlannedReader&) = delete;

  bool direct() const { return direct_; }
  // Copies the next n bytes of the planned stream into dst. Throws
  // k3::Error: SourceChanged if the file ends early (it shrank), Io on a
  // read error, Internal past the planned bytes.
  void read(void* dst, size_t n);
  uint64_t requests() const { return pieces_.size(); }  // direct mode: reads issued

 private:
  struct Piece {
    uint64_t begin = 0, end = 0;  // wanted bytes [begin, end) of the file
  };
  struct Slot {
    size_t piece = SIZE_MAX;  // the piece this slot holds once read
    const uint8_t* data = nullptr;  // file byte `begin` of that piece
    std::exception_ptr error;
  };
  void readBuffered(void* dst, size_t n);
  void worker();
  void readPiece(const Piece& p, uint8_t* buf, Slot& out);

  int fd_;
  std::string path_;
  uint64_t size_;
  std::vector<ByteRange> ranges_;
  bool direct_;
  int flags_ = -1;  // the descriptor's flags before O_DIRECT
  PlannedReadBuffers& buffers_;
  PlannedReadPhases* phases_;

  // Buffered mode: where the consumer is, and the WILLNEED window.
  size_t range_ = 0;
  uint64_t inRange_ = 0;
  size_t advised_ = 0;
  uint64_t advisedBytes_ = 0, consumedBytes_ = 0;

  // Direct mode.
  std::vector<Piece> pieces_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable ready_, freed_;
  size_t nextClaim_ = 0;  // next piece a reader thread takes
  size_t held_ = 0;       // the consumer's piece; pieces below it are released
  uint64_t heldAt_ = 0;   // bytes of it already consumed
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace k3
