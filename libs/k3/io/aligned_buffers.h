// AlignedBuffers: a fixed set of equal buffers for O_DIRECT reads and
// writes (4 KiB-aligned sizes, 2 MiB-aligned addresses advised as huge
// pages), allocated once and reused for every file: on these VMs the first
// touch of fresh memory costs more than the I/O into it. The one allocator
// behind k3-repack's write chunks and source read ring and k3-verify's
// per-thread read blocks.
// Thread-safety: the set is immutable after construction; who writes which
// buffer is up to its owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3 {

class AlignedBuffers {
 public:
  static constexpr size_t kAlign = 4096;
  // `count` buffers of bytesEach rounded up to kAlign (at least kAlign).
  // Throws std::bad_alloc (nothing left allocated).
  AlignedBuffers(size_t bytesEach, size_t count);
  ~AlignedBuffers();
  AlignedBuffers(const AlignedBuffers&) = delete;
  AlignedBuffers& operator=(const AlignedBuffers&) = delete;
  size_t bytesEach() const { return bytesEach_; }
  size_t count() const { return data_.size(); }
  uint8_t* at(size_t i) const { return data_[i]; }

 private:
  size_t bytesEach_;
  std::vector<uint8_t*> data_;
};

}  // namespace k3
