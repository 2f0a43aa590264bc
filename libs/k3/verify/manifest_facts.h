// ManifestFacts: the parts of k3-manifest.json that k3-verify checks, copied
// out of k3::ExpertManifest (the one manifest parser) so the checks below do
// not depend on its internal layout. Offsets are absolute file offsets.
// Thread-safety: values and loaders that share nothing; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace k3::verify {

struct ManifestShardFact {
  std::string file;    // shard basename (spread: "<root>/<basename>", ExpertManifest::location)
  uint64_t size = 0;   // whole file, bytes
  std::string sha256;  // lowercase hex of the whole file
  uint64_t dataOffset = 0;  // 8 + N
  uint64_t tensors = 0;     // header entry count
  std::string sourceFile;   // the source shard it was made from
  uint64_t sourceSize = 0;
  std::string sourceHeaderSha256;  // of the source's first 8 + N bytes
};

struct ManifestFileFact {  // a copied extra file (config.json, ...)
  std::string file;
  uint64_t size = 0;
  std::string sha256;
};

struct ManifestExpertFact {
  int layer = -1;
  int id = -1;
  std::string file;    // shard basename holding the expert's six tensors
  uint64_t begin = 0;  // absolute byte range in that file
  uint64_t end = 0;
  std::string sha256;  // of the bytes as read from the source
};

struct ManifestFacts {
  int bits = 8;  // spec §5.2 bit widths per class
  int mlaBits = 8;
  int headBits = 8;
  std::vector<ManifestShardFact> shards;
  std::vector<ManifestExpertFact> experts;
  std::vector<ManifestFileFact> files;
  uint64_t expertBytes = 0;
  // source: what the container was made from, checked against DST/config.json.
  std::string configSha256;
  std::string prefix;
  int numLayers = 0;
  int numExperts = 0;
};

// Loads DST/k3-manifest.json through k3::ExpertManifest. Throws k3::Error.
ManifestFacts loadManifestFacts(const std::string& path);

// Weight map of a model.safetensors.index.json (through the snapshot index
// parser): tensor name -> shard basename, plus metadata.total_size if given.
struct IndexFacts {
  std::vector<std::pair<std::string, std::string>> weightMap;
  std::optional<uint64_t> totalSize;
};
IndexFacts loadIndexFacts(const std::string& path);

}  // namespace k3::verify
