// SourceIndex: every tensor of a source snapshot, found through the shard
// headers themselves (not its index), for the --source passes of k3-verify.
// Thread-safety: scanSource writes only the report it is given; a SourceIndex
// is a value, safe to share read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "k3/format/dtype.h"
#include "k3/verify/verify_report.h"

namespace k3::verify {

struct SourceTensor {
  size_t shard = 0;          // index into SourceIndex::paths
  uint64_t begin = 0, end = 0;  // absolute byte range in the shard file
  Dtype dtype = Dtype::U8;
  std::vector<uint64_t> shape;
};

struct SourceIndex {
  std::vector<std::string> paths, files;  // *.safetensors of SRC, sorted; basenames
  std::unordered_map<std::string, SourceTensor> where;

  // `name` (which carries the container's prefix, "" or "language_model."),
  // or the same name under the other prefix convention; nullptr if neither.
  const SourceTensor* find(const std::string& name, std::string_view containerPrefix) const;
};

// Throws Io if SRC is not a readable directory; an unusable shard header is a
// Source problem in `report`.
SourceIndex scanSource(const std::string& srcDir, VerifyReport& report);

}  // namespace k3::verify
