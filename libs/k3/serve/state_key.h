// The identity of a checkpoint: the exact token prefix it holds, under one
// container. A key is a 128-bit chain over the ids, seeded by the container's
// identity (container_identity: the manifest's digest and the options that
// change the numbers), so the key of every prefix of a prompt costs one step
// each: lookup walks a prompt's prefixes from the longest down.
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "k3/io/sha256.h"

namespace k3::serve {

struct StateKey {
  uint64_t hi = 0, lo = 0;
  bool operator==(const StateKey&) const = default;
  std::string hex() const;  // 32 lower-case hex digits: the file name's stem
};

struct StateKeyHash {
  size_t operator()(const StateKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull)); }
};

// keys[i] = the key of prompt[0, i) for i in [0, prompt.size()].
std::vector<StateKey> prefixKeys(const Sha256Digest& container, std::span<const int32_t> prompt);
StateKey stateKey(const Sha256Digest& container, std::span<const int32_t> tokens);

}  // namespace k3::serve
