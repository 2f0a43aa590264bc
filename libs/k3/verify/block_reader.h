// BlockReader: reads one file front to back in large blocks on a background
// thread, a few blocks ahead of the consumer, so disk reads overlap hashing.
// Direct mode (O_DIRECT into aligned buffers) skips the page cache: on these
// VMs inserting pages costs more than the hashing, so cold files are read
// direct and files already cached are read buffered (io/page_cache.h).
// One consumer thread; blocks are valid until the next call to next().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k3/io/aligned_buffers.h"

namespace k3::verify {

class BlockReader {
 public:
  struct Block {
    const uint8_t* data = nullptr;
    size_t size = 0;  // 0 = end of file
    uint64_t offset = 0;
  };

  // Throws k3::Error(Io) if the file cannot be opened. `buffers` (at least
  // 2, one block each) must outlive the reader and not be shared with
  // another live reader.
  BlockReader(const std::string& path, bool direct, AlignedBuffers& buffers);
  ~BlockReader();
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  // The next block in file order; throws k3::Error(Io) on a read error.
  Block next();

 private:
  void produce();

  struct Slot {
    uint8_t* data = nullptr;
    size_t size = 0;
    uint64_t offset = 0;
    bool full = false;
    bool last = false;
  };
  std::string path_;
  int fd_ = -1;
  size_t blockBytes_;
  std::vector<Slot> slots_;
  size_t consumeAt_ = 0;
  bool holding_ = false;  // consumer holds slots_[consumeAt_]
  std::mutex mu_;
  std::condition_variable filled_, freed_;
  bool stop_ = false;
  int error_ = 0;
  std::thread thread_;
};

}  // namespace k3::verify
