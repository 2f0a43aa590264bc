// Fast (metadata-only) checks of a repacked container directory: shard
// headers, exact sizes, index <-> headers, the tensor set the config implies
// (dtype, shape, quantized form and .qs sidecars by codec's stored-form rule,
// expected bit widths from the manifest settings), container order (spec
// §5.6), and agreement with k3-manifest.json. Reads headers only: seconds on
// 1.5 TB.
// Thread-safety: stateless; each call writes only the report it is given, so
// calls on other reports may run at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/format/safetensors_header.h"
#include "k3/verify/manifest_facts.h"
#include "k3/verify/verify_report.h"

namespace k3::verify {

struct ShardFacts {
  std::string file;  // basename; "<root>/<basename>" in another root of a spread container
  std::string path;
  uint64_t size = 0;
  bool regular = false;  // a regular file (after symlinks): a FIFO or device is reported, never read
  bool headerOk = false;
  uint64_t dataOffset = 0;  // 8 + N
  SafetensorsHeader header;
};

struct ContainerFacts {
  std::string dir;
  std::vector<ShardFacts> shards;  // sorted by file name
  std::optional<ModelConfig> config;
  std::string prefix;  // "" or "language_model."
  std::vector<std::string> rootDirs;  // DST, then a spread container's other roots where they are now
  std::optional<ManifestFacts> manifest;
};

// Runs every fast check, appending problems to `report`. Throws k3::Error
// only when it cannot run at all (DST is not a readable directory, a root of
// a spread container is missing or is not this container's). `spread`: the
// other roots' directories when they moved (k3-verify --spread).
ContainerFacts checkContainer(const std::string& dir, VerifyReport& report,
                              const std::vector<std::string>& spread = {});

}  // namespace k3::verify
