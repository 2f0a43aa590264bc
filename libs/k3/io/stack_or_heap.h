// StackOrHeap<T, InPlace>: uninitialised scratch for n values of T, held in
// the object itself (so on the caller's stack) when n <= InPlace, else on the
// heap, allocated once by the constructor. For per-call scratch on a hot
// path: sized so every decode call fits in place, it never allocates per
// token, while a large prefill batch still works. Not thread-safe; one per
// call (it is scratch, not shared state).
//
// The contents are left uninitialised: the caller writes every value before
// it reads one.
//
// Internal linkage (an unnamed namespace): SIMD kernels built with different
// ISA flags include this header, and one shared inline symbol could let the
// linker hand an AVX-512 copy to a baseline caller.
#pragma once

#include <cstddef>
#include <memory>

namespace k3 {
namespace {

template <typename T, size_t InPlace>
class StackOrHeap {
 public:
  explicit StackOrHeap(size_t n) {
    if (n <= InPlace) return;
    heap_.reset(new T[n]);
    data_ = heap_.get();
  }
  StackOrHeap(const StackOrHeap&) = delete;
  StackOrHeap& operator=(const StackOrHeap&) = delete;

  T* data() { return data_; }

 private:
  alignas(64) T inPlace_[InPlace];
  std::unique_ptr<T[]> heap_;
  T* data_ = inPlace_;
};

}  // namespace
}  // namespace k3
