// CheckedContainer: a container as its checker has already read it (k3-run's
// start gate, verify/container_gate.h): config.json parsed and every shard's
// header parsed, in the order the opener maps them. Handed to
// ModelWeights::open so that k3-run reads the container once. Plain data,
// move-only (it owns the parsed headers); not shared between threads.
#pragma once

#include <string>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/format/safetensors_file.h"

namespace k3 {

struct CheckedContainer {
  ModelConfig config;
  // DST, then a spread container's other roots where they are now.
  std::vector<std::string> rootDirs;
  // Access::HeaderOnly files (SafetensorsFile::fromParsed): by file name, or
  // in the manifest's order for a spread container.
  std::vector<SafetensorsFile> shards;
};

}  // namespace k3
