#include "k3/serve/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "k3/io/aligned_buffers.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/output_file.h"
#include "k3/model/kda_layer.h"

namespace k3::serve {

namespace {

constexpr uint64_t kAlign = 4096;
constexpr char kMagic[8] = {'K', '3', 'S', 'T', 'A', 'T', 'E', '\0'};

// Header fields (little-endian, as this x86-64 code writes them).
struct HeaderFixed {
  char magic[8];
  uint32_t version;
  uint32_t headerBytes;
  uint8_t container[32];
  uint64_t keyHi, keyLo;
  uint64_t tokens, vocab;
  uint32_t layers, reserved;
  uint64_t payloadBytes;  // tokens + logits + layer sections, before padding
  uint8_t sha256[32];     // of the whole file with these 32 bytes zero
};
static_assert(sizeof(HeaderFixed) == 128);
struct LayerEntry {
  uint32_t kind;  // 0 KDA, 1 MLA
  uint32_t reserved;
  uint64_t a, b;
};
static_assert(sizeof(LayerEntry) == 24);

uint64_t roundUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
uint64_t headerBytesFor(size_t layers) { return roundUp(sizeof(HeaderFixed) + layers * sizeof(LayerEntry)); }

uint64_t payloadBytes(const model::StateSnapshot& s) {
  uint64_t b = s.tokens.size() * 4 + s.lastLogits.size() * 4;
  for (const auto& k : s.kda) b += (k.S.size() + k.conv.size()) * 4;
  for (const auto& m : s.mla) b += (m.L.size() + m.R.size()) * 4;
  return b;
}

// The payload's sections in file order.
template <typename F>
void forEachSection(const model::StateSnapshot& s, F&& f) {
  f(s.tokens.data(), s.tokens.size() * 4);
  f(s.lastLogits.data(), s.lastLogits.size() * 4);
  for (size_t l = 0; l < s.kda.size(); ++l) {
    if (!s.kda[l].S.empty() || !s.kda[l].conv.empty()) {
      f(s.kda[l].S.data(), s.kda[l].S.size() * 4);
      f(s.kda[l].conv.data(), s.kda[l].conv.size() * 4);
    } else {
      f(s.mla[l].L.data(), s.mla[l].L.size() * 4);
      f(s.mla[l].R.data(), s.mla[l].R.size() * 4);
    }
  }
}

std::vector<uint8_t> header(const model::StateSnapshot& s, const Sha256Digest& container) {
  const size_t layers = s.kda.size();
  std::vector<uint8_t> h(headerBytesFor(layers), 0);
  HeaderFixed f{};
  std::memcpy(f.magic, kMagic, 8);
  f.version = kStateFileVersion;
  f.headerBytes = static_cast<uint32_t>(h.size());
  std::memcpy(f.container, container.data(), 32);
  const StateKey key = stateKey(container, s.tokens);
  f.keyHi = key.hi;
  f.keyLo = key.lo;
  f.tokens = s.tokens.size();
  f.vocab = s.lastLogits.size();
  f.layers = static_cast<uint32_t>(layers);
  f.payloadBytes = payloadBytes(s);
  std::memcpy(h.data(), &f, sizeof f);
  for (size_t l = 0; l < layers; ++l) {
    const bool kda = !s.kda[l].S.empty() || !s.kda[l].conv.empty();
    const size_t n = std::max<size_t>(1, s.tokens.size());
    LayerEntry e{kda ? 0u : 1u, 0,
                 kda ? s.kda[l].S.size() : s.mla[l].L.size() / n,
                 kda ? s.kda[l].conv.size() : s.mla[l].R.size() / n};
    std::memcpy(h.data() + sizeof f + l * sizeof e, &e, sizeof e);
  }
  return h;
}

}  // namespace

StateShape StateShape::of(const ModelConfig& c) {
  StateShape s;
  s.vocab = static_cast<uint64_t>(c.vocabSize);
  for (int i = 0; i < c.numLayers; ++i) {
    if (c.isKdaLayer(i)) {
      const model::KdaState k(c);
      s.layers.push_back({true, k.S.size(), k.conv.size()});
    } else {
      s.layers.push_back({false, static_cast<uint64_t>(c.kvLoraRank), static_cast<uint64_t>(c.qkRopeHeadDim)});
    }
  }
  return s;
}

uint64_t stateFileBytes(const model::StateSnapshot& s) {
  return headerBytesFor(s.kda.size()) + roundUp(payloadBytes(s));
}

void writeStateFile(const std::string& path, const model::StateSnapshot& s, const Sha256Digest& container) {
  if (s.tokens.empty()) fail(ErrorKind::Internal, path, ": no tokens to checkpoint");
  std::vector<uint8_t> h = header(s, container);
  const uint64_t payload = payloadBytes(s);
  const std::vector<uint8_t> pad(roundUp(payload) - payload, 0);
  Sha256 sha;
  sha.update(h.data(), h.size());
  forEachSection(s, [&](const void* p, size_t n) { sha.update(p, n); });
  sha.update(pad.data(), pad.size());
  const Sha256Digest d = sha.finish();
  std::memcpy(h.data() + offsetof(HeaderFixed, sha256), d.data(), 32);
  AtomicOutput out(path);
  out.write(h.data(), h.size());
  forEachSection(s, [&](const void* p, size_t n) { out.write(p, n); });
  out.write(pad.data(), pad.size());
  out.commit();
}

StateFileRead readStateFile(const std::string& path, const StateKey& key, const StateShape& shape,
                            const Sha256Digest& container) {
  auto refuse = [](std::string why) { return StateFileRead{nullptr, std::move(why)}; };
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  if (fd < 0 && errno == EINVAL) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // no O_DIRECT here (tmpfs)
  if (fd < 0) return refuse(std::string("cannot open: ") + std::strerror(errno));
  UniqueFd file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return refuse("not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kAlign || size % kAlign != 0)
    return refuse("truncated: " + std::to_string(size) + " bytes, not a whole number of 4 KiB blocks");
  AlignedBuffers buf(size, 1);
  uint8_t* b = buf.at(0);
  size_t got = 0;
  try {
    got = preadFull(fd, b, size, 0, path);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  if (got != size) return refuse("truncated while reading");
  HeaderFixed f{};
  std::memcpy(&f, b, sizeof f);
  if (std::memcmp(f.magic, kMagic, 8) != 0) return refuse("not a k3kit state file (bad magic)");
  if (f.version != kStateFileVersion)
    return refuse("format version " + std::to_string(f.version) + ", this k3kit reads version " +
                  std::to_string(kStateFileVersion));
  if (std::memcmp(f.container, container.data(), 32) != 0) return refuse("written for another container");
  if (f.layers != shape.layers.size() || f.vocab != shape.vocab)
    return refuse("another model shape (" + std::to_string(f.layers) + " layers, vocabulary " + std::to_string(f.vocab) + ")");
  if (f.headerBytes != headerBytesFor(f.layers) || f.headerBytes + roundUp(f.payloadBytes) != size)
    return refuse("truncated or padded: header says " + std::to_string(f.headerBytes + roundUp(f.payloadBytes)) +
                  " bytes, the file has " + std::to_string(size));
  uint8_t stored[32];
  std::memcpy(stored, b + offsetof(HeaderFixed, sha256), 32);
  std::memset(b + offsetof(HeaderFixed, sha256), 0, 32);
  Sha256 sha;
  sha.update(b, size);
  const Sha256Digest d = sha.finish();
  if (std::memcmp(stored, d.data(), 32) != 0) return refuse("content hash mismatch (corrupt)");
  if (f.keyHi != key.hi || f.keyLo != key.lo) return refuse("holds another prefix than its name says");

  auto s = std::make_shared<model::StateSnapshot>();
  const uint64_t n = f.tokens;
  uint64_t expect = n * 4 + shape.vocab * 4;
  for (const auto& L : shape.layers) expect += L.kda ? (L.a + L.b) * 4 : n * (L.a + L.b) * 4;
  if (f.payloadBytes != expect) return refuse("payload of " + std::to_string(f.payloadBytes) + " bytes, the model needs " + std::to_string(expect));
  const uint8_t* p = b + f.headerBytes;
  auto take = [&p](auto& v, uint64_t count) {
    v.resize(count);
    std::memcpy(v.data(), p, count * 4);
    p += count * 4;
  };
  take(s->tokens, n);
  take(s->lastLogits, shape.vocab);
  s->kda.resize(shape.layers.size());
  s->mla.resize(shape.layers.size());
  for (size_t l = 0; l < shape.layers.size(); ++l) {
    LayerEntry e{};
    std::memcpy(&e, b + sizeof f + l * sizeof e, sizeof e);
    const auto& L = shape.layers[l];
    if (e.kind != (L.kda ? 0u : 1u) || e.a != L.a || e.b != L.b) return refuse("layer " + std::to_string(l) + " has another shape");
    if (L.kda) {
      take(s->kda[l].S, L.a);
      take(s->kda[l].conv, L.b);
    } else {
      take(s->mla[l].L, n * L.a);
      take(s->mla[l].R, n * L.b);
    }
  }
  if (stateKey(container, s->tokens) != key) return refuse("its tokens do not match its key");
  return {std::move(s), ""};
}

}  // namespace k3::serve
