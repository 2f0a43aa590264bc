// libFuzzer target: k3::ExpertManifest::parse (k3-manifest.json and the
// .k3-parts fragments) on arbitrary bytes. A parse either throws k3::Error or
// returns a manifest that serializes and parses back to itself.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "k3/format/expert_manifest.h"
#include "k3/io/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    k3::ExpertManifest m = k3::ExpertManifest::parse(text, "fuzz.k3-manifest.json");
    for (const auto& s : m.shards)
      for (const auto& e : s.experts)
        (void)m.findExpert(e.layer, e.id);
    k3::ExpertManifest again = k3::ExpertManifest::parse(m.toJson(), "fuzz.roundtrip.json");
    if (again.toJson() != m.toJson()) std::abort();
  } catch (const k3::Error&) {
  }
  return 0;
}
