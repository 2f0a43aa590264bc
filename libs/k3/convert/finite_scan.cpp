#include "k3/convert/finite_scan.h"

#include <algorithm>
#include <cstring>

#include "k3/io/error.h"

namespace k3::convert {
namespace {

// All-ones exponent = Inf or NaN, per format: (mask over the top bits).
template <typename U>
size_t scan(const uint8_t* p, size_t n, U exponentMask) {
  const size_t count = n / sizeof(U);
  for (size_t i = 0; i < count; ++i) {
    U v;
    std::memcpy(&v, p + i * sizeof(U), sizeof(U));
    if ((v & exponentMask) == exponentMask) return i;
  }
  return SIZE_MAX;
}

}  // namespace

size_t firstNonFinite(Dtype dtype, const uint8_t* p, size_t n) {
  switch (dtype) {
    case Dtype::BF16: return scan<uint16_t>(p, n, 0x7f80);
    case Dtype::F16: return scan<uint16_t>(p, n, 0x7c00);
    case Dtype::F32: return scan<uint32_t>(p, n, 0x7f800000u);
    case Dtype::F64: return scan<uint64_t>(p, n, 0x7ff0000000000000ull);
    default: return SIZE_MAX;
  }
}

FiniteScan::FiniteScan(Dtype dtype, std::string tensor, std::string path)
    : dtype_(dtype), elem_(dtypeBits(dtype) / 8), tensor_(std::move(tensor)), path_(std::move(path)) {}

void FiniteScan::feed(const uint8_t* p, size_t n) {
  auto check = [&](const uint8_t* q, size_t bytes) {
    const size_t bad = firstNonFinite(dtype_, q, bytes);
    if (bad != SIZE_MAX)
      fail(ErrorKind::Format, path_, ": tensor '", tensor_, "' holds a non-finite ", dtypeName(dtype_),
           " value (NaN or Inf) at element ", seen_ + bad);
    seen_ += bytes / elem_;
  };
  if (carried_) {  // complete the element split by the previous piece
    const size_t take = std::min(n, elem_ - carried_);
    std::memcpy(carry_ + carried_, p, take);
    carried_ += take;
    p += take;
    n -= take;
    if (carried_ < elem_) return;
    check(carry_, elem_);
    carried_ = 0;
  }
  const size_t whole = n / elem_ * elem_;
  check(p, whole);
  carried_ = n - whole;
  std::memcpy(carry_, p + whole, carried_);
}

}  // namespace k3::convert
