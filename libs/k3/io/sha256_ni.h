// Sha256Ni: SHA-256 on the SHA-NI instructions, with a paired update that
// feeds two independent streams in one interleaved loop. One SHA-NI stream is
// latency-bound (sha256rnds2 waits on its own result); two interleaved
// streams keep the unit busy, so a shard digest and an expert digest over the
// same bytes cost little more than one. Used by k3-verify --full; falls back
// to nothing: callers check sha256NiAvailable() and use k3::Sha256 otherwise.
// Not thread-safe (one stream per object).
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/io/sha256.h"

namespace k3 {

bool sha256NiAvailable();  // CPU has SHA-NI and SSE4.1

class Sha256Ni {
 public:
  Sha256Ni();
  void update(const uint8_t* data, size_t len);
  Sha256Digest finish();  // the stream must not be updated afterwards
  std::string finishHex() { return Sha256::hex(finish()); }

  // a.update(pa, len) and b.update(pb, len), interleaved.
  static void updatePair(Sha256Ni& a, const uint8_t* pa, Sha256Ni& b, const uint8_t* pb, size_t len);

 private:
  size_t fill(const uint8_t*& p, size_t& len);  // tops up the partial block
  uint32_t state_[8];
  uint8_t partial_[64];
  size_t partialLen_ = 0;
  uint64_t total_ = 0;
};

}  // namespace k3
