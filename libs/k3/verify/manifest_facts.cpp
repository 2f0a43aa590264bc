#include "k3/verify/manifest_facts.h"

#include "k3/format/expert_manifest.h"
#include "k3/format/snapshot_index.h"

namespace k3::verify {

ManifestFacts loadManifestFacts(const std::string& path) {
  const ExpertManifest m = ExpertManifest::load(path);
  ManifestFacts f;
  f.bits = m.settings.bits;
  f.mlaBits = m.settings.mlaBits;
  f.headBits = m.settings.headBits;
  f.expertBytes = m.expertBytes;
  f.configSha256 = m.configSha256;
  f.prefix = m.prefix;
  f.numLayers = m.numLayers;
  f.numExperts = m.numExperts;
  for (const auto& s : m.shards) {
    const std::string where = m.location(s);  // as the checker names the shard
    f.shards.push_back({where, s.size, s.sha256, s.dataOffset, s.tensors, s.source.file, s.source.size,
                        s.source.headerSha256});
    for (const auto& e : s.experts)
      f.experts.push_back({e.layer, e.id, where, e.offset, e.offset + e.length, e.sha256});
  }
  for (const auto& x : m.files) f.files.push_back({x.file, x.size, x.sha256});
  return f;
}

IndexFacts loadIndexFacts(const std::string& path) {
  SnapshotIndex index = SnapshotIndex::load(path, SnapshotIndex::ShardNames::SpreadLocations);
  IndexFacts f;
  f.weightMap = std::move(index.weightMap);
  f.totalSize = index.totalSize;
  return f;
}

}  // namespace k3::verify
