// libFuzzer target: the snapshot index parser (k3::SnapshotIndex::parse) and
// the config parser (k3::ModelConfig::parse) on arbitrary bytes. Both must
// either throw k3::Error or return a value that holds their invariants; a
// parsed config must also drive the tensor inventory without failing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_set>

#include "k3/format/model_config.h"
#include "k3/format/snapshot_index.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    k3::SnapshotIndex idx = k3::SnapshotIndex::parse(text, "fuzz.index.json");
    std::unordered_set<std::string> names;
    for (const auto& [name, file] : idx.weightMap)
      if (!names.insert(name).second) std::abort();  // duplicates must be refused
    // Written text must parse back to the same map (total_size is always written).
    k3::SnapshotIndex again = k3::SnapshotIndex::parse(idx.toJson(), "fuzz.roundtrip.json");
    if (again.weightMap != idx.weightMap || again.totalSize.value_or(0) != idx.totalSize.value_or(0))
      std::abort();
  } catch (const k3::Error&) {
  }
  try {
    k3::ModelConfig cfg = k3::ModelConfig::parse(text, "fuzz.config.json");
    auto expected = k3::expectedDenseTensors(cfg, "");
    for (const auto& e : expected)
      if (k3::classifyTensor(e.name, cfg) != e.cls) std::abort();
    (void)k3::expertBytes(cfg);
  } catch (const k3::Error&) {
  }
  return 0;
}
