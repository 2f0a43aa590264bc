#include "k3/io/aligned_buffers.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace k3 {

AlignedBuffers::AlignedBuffers(size_t bytesEach, size_t count)
    : bytesEach_(std::max(kAlign, (bytesEach + kAlign - 1) / kAlign * kAlign)), data_(count, nullptr) {
  for (auto& d : data_) {
    void* p = nullptr;
    if (::posix_memalign(&p, size_t{2} << 20, bytesEach_) != 0) {
      for (auto* q : data_) std::free(q);
      throw std::bad_alloc();
    }
    ::madvise(p, bytesEach_, MADV_HUGEPAGE);  // first touch is cheaper with huge pages here
    d = static_cast<uint8_t*>(p);
  }
}

AlignedBuffers::~AlignedBuffers() {
  for (auto* d : data_) std::free(d);
}

}  // namespace k3
