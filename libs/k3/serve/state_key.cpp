#include "k3/serve/state_key.h"

#include <cstring>

namespace k3::serve {

namespace {

// splitmix64's finaliser: every input bit moves every output bit.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

StateKey seed(const Sha256Digest& c) {
  StateKey k;
  std::memcpy(&k.hi, c.data(), 8);
  std::memcpy(&k.lo, c.data() + 8, 8);
  return k;
}

// Two chains with different constants: 128 bits against accidental equality
// (the file's tokens are compared anyway; a collision would only be a miss).
StateKey step(StateKey k, int32_t id) {
  const uint64_t t = static_cast<uint32_t>(id);
  return {mix(k.hi ^ (t + 0x9e3779b97f4a7c15ull)), mix(k.lo + t * 0xc2b2ae3d27d4eb4full + 0x165667b19e3779f9ull)};
}

}  // namespace

std::string StateKey::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[static_cast<size_t>(15 - i)] = digits[(hi >> (4 * i)) & 15];
    s[static_cast<size_t>(31 - i)] = digits[(lo >> (4 * i)) & 15];
  }
  return s;
}

std::vector<StateKey> prefixKeys(const Sha256Digest& container, std::span<const int32_t> prompt) {
  std::vector<StateKey> keys(prompt.size() + 1);
  keys[0] = seed(container);
  for (size_t i = 0; i < prompt.size(); ++i) keys[i + 1] = step(keys[i], prompt[i]);
  return keys;
}

StateKey stateKey(const Sha256Digest& container, std::span<const int32_t> tokens) {
  StateKey k = seed(container);
  for (int32_t id : tokens) k = step(k, id);
  return k;
}

}  // namespace k3::serve
