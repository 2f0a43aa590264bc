// One checkpoint as a file (the state cache's disk tier; layout in
// docs/STATE_CACHE.md): a 4 KiB-aligned header (magic, format version,
// container identity, prefix key, sizes, per-layer shapes, SHA-256 of the
// whole file) then the tokens, the last logits, each KDA layer's state and
// conv window and each MLA layer's rows, zero-padded to 4 KiB so it reads
// back with O_DIRECT in one piece.
//
// A file is published atomically (temp, fsync, rename, fsync of the
// directory) and never changed afterwards; its name is its key, so replicas
// sharing a directory write the same bytes under the same name. Reading
// checks everything before anything is used: a file that is short, not a
// state file, of another format version or container, of another model
// shape, whose hash or key does not match is refused with the reason.
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "k3/format/model_config.h"
#include "k3/io/sha256.h"
#include "k3/model/session.h"
#include "k3/serve/state_key.h"

namespace k3::serve {

inline constexpr uint32_t kStateFileVersion = 1;
inline constexpr const char* kStateFileSuffix = ".k3state";

// What a checkpoint of this model looks like, per layer (sizes in floats).
struct StateShape {
  struct Layer {
    bool kda = false;
    uint64_t a = 0, b = 0;  // KDA: S and conv sizes; MLA: L and R row widths
  };
  std::vector<Layer> layers;
  uint64_t vocab = 0;
  static StateShape of(const ModelConfig& c);
};

// Bytes of the file for `s` (header + payload, padded).
uint64_t stateFileBytes(const model::StateSnapshot& s);

// Writes `s` to `path` atomically. Throws k3::Error (Io, NoSpace) naming the file.
void writeStateFile(const std::string& path, const model::StateSnapshot& s, const Sha256Digest& container);

struct StateFileRead {
  std::shared_ptr<model::StateSnapshot> snap;  // null when refused
  std::string problem;                         // why (one line), when refused
};

// Reads `path` (O_DIRECT where the file system allows it) expecting the
// checkpoint keyed `key` of `shape` under `container`.
StateFileRead readStateFile(const std::string& path, const StateKey& key, const StateShape& shape,
                            const Sha256Digest& container);

}  // namespace k3::serve
