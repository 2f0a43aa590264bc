// libFuzzer target: k3::parseSafetensorsHeader on arbitrary bytes. The first
// 8 bytes give the data-section size (so offsets can be in or out of range),
// the rest is the header JSON. A parse either throws k3::Error or returns a
// header whose tensors tile [0, dataSize) exactly; anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "k3/format/safetensors_header.h"
#include "k3/io/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t dataSize = 0;
  if (size >= 8) {
    for (int i = 7; i >= 0; --i) dataSize = (dataSize << 8) | data[i];
    dataSize &= (uint64_t{1} << 40) - 1;
    data += 8;
    size -= 8;
  }
  std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    k3::SafetensorsHeader h = k3::parseSafetensorsHeader(json, dataSize, "fuzz.safetensors");
    uint64_t cursor = 0;
    for (size_t i : h.offsetOrder()) {
      const k3::TensorInfo& t = h.tensors[i];
      if (t.begin != cursor || t.end < t.begin) std::abort();
      if (h.find(t.name) != &t) std::abort();
      cursor = t.end;
    }
    if (cursor != dataSize) std::abort();
  } catch (const k3::Error&) {
  }
  return 0;
}
