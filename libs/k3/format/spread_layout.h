// SpreadLayout: a container whose shard files lie in several directories,
// one per drive (k3-repack --spread, docs/CONTAINER.md "Spread over several
// drives"). DST is root 0 and keeps the index and the manifest; every other
// root holds its shard files and a k3-spread-root.json marker binding it to
// the container, so a missing, wrong or swapped directory is one clear error
// before anything is read. Paths are recorded relative to DST.
//
// Placement: each layer's experts are cut into one part per root (contiguous
// id ranges of equal size), so a token's top-k reads of one layer hit every
// drive at once; a shard file holds one part, experts in (layer, id) order.
// Thread-safety: pure functions and values (resolveSpreadRoots only reads the
// file system); safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "k3/format/expert_manifest.h"

namespace k3 {

inline constexpr size_t kMaxSpreadRoots = 64;

// A root as the manifest records it: relative ("../d2/k3"), not "." (DST is
// roots[0]), no empty component, no NUL, no trailing '/'.
bool isSpreadRootPath(std::string_view root);

// Where a shard is relative to DST (the index's and the checkers' name for it).
std::string spreadLocation(std::string_view root, std::string_view file);

// Part `part` (0-based) of a source shard's output: part 0 keeps the shard's
// name (and its dense tensors); part k >= 1 is "<name>.part<k+1>.safetensors".
std::string spreadPartName(const std::string& shardName, int part);
// The inverse: the shard a "<name>.part<k>.safetensors" file is part of
// (its part-0 name), or "" when `file` is not a part name.
std::string spreadPartShard(std::string_view file);
// Which part the expert at `position` of a layer's `count` experts (id order) goes to.
int spreadPartOf(size_t position, size_t count, int parts);
// Which root part `part` of source shard `shardNumber` (1-based) lives in:
// rotated, so the dense tensors (part 0) are spread too.
int spreadRootOf(int shardNumber, int part, int roots);

// "a,b,c" -> {"a", "b", "c"}; Usage error on an empty item.
std::vector<std::string> parseSpreadDirs(const std::string& list, const char* flag = "--spread");

// The path of `dir` relative to `dst` (both must exist; symlinks resolved).
// Usage error when dir is DST or inside it.
std::string relativeRootPath(const std::string& dst, const std::string& dir);

// k3-spread-root.json in every root but DST.
struct SpreadMarker {
  static constexpr const char* kFileName = "k3-spread-root.json";
  std::string configSha256;  // the container's source.config_sha256
  ManifestSettings settings;
  int root = 0;   // this directory's index in the manifest's roots
  int roots = 0;  // how many roots the container has

  static SpreadMarker forRoot(const ExpertManifest& m, int root);
  bool operator==(const SpreadMarker&) const = default;
  std::string toJson() const;
  // Throws Format naming `path`.
  static SpreadMarker parse(std::string_view json, const std::string& path);
};

// The directory of every root of a spread container: [0] = dst, [k] =
// overrides[k-1] when given (the set was moved), else dst/roots[k]. Each must
// be a directory holding this container's marker for root k. Throws Usage
// (override count), Missing (directory or marker) or Mismatch (another
// container's or another root's marker) with one line.
std::vector<std::string> resolveSpreadRoots(const std::string& dst, const ExpertManifest& m,
                                            const std::vector<std::string>& overrides);

// Where the shard files of the container in `dst` (manifest `m`) live now:
// one entry per root, [0] = {dst, "."}, then for a spread container each
// other root's directory (resolveSpreadRoots) and its recorded path, the
// prefix of its files' locations (spreadLocation). Throws Usage when
// `overrides` (--spread) are given for a one-directory container, and what
// resolveSpreadRoots throws.
struct ShardRoot {
  std::string dir;   // where the root is now
  std::string root;  // as the manifest records it: "." for DST, else m.roots[k]
};
std::vector<ShardRoot> shardRoots(const std::string& dst, const ExpertManifest& m,
                                  const std::vector<std::string>& overrides);
// The path of a shard the manifest lists: its root's directory / its file.
std::string shardPath(const std::vector<ShardRoot>& roots, const ManifestShard& s);

}  // namespace k3
