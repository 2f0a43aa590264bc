// FiniteScan: refuses NaN / Inf in a float tensor's bytes as they stream past
// (BF16, F16, F32, F64; little-endian). A non-finite weight would pass repack
// and verify and only break generation, so the converter names it up front.
// Bytes may arrive in pieces that split an element: the partial element is
// carried to the next piece.
// Thread-safety: firstNonFinite is pure; a FiniteScan carries a split element
// between pieces, so one per stream (not thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "k3/format/dtype.h"

namespace k3::convert {

// Index of the first non-finite element in [p, p + n) (n a multiple of the
// element size), or SIZE_MAX if all are finite.
size_t firstNonFinite(Dtype dtype, const uint8_t* p, size_t n);

class FiniteScan {
 public:
  FiniteScan(Dtype dtype, std::string tensor, std::string path);
  // Throws Format naming path, tensor and element on the first NaN / Inf.
  void feed(const uint8_t* p, size_t n);

 private:
  Dtype dtype_;
  size_t elem_;
  std::string tensor_, path_;
  uint8_t carry_[8] = {};
  size_t carried_ = 0;
  uint64_t seen_ = 0;  // elements before the current piece
};

}  // namespace k3::convert
