// Locating expert tensors in a directory of safetensors shards by name (a
// pattern match on the tensor names written here, independent of k3's tensor
// inventory), for the k3-verify corruption tests.
#pragma once

#include <filesystem>
#include <string_view>
#include <string>
#include <vector>

#include "k3/format/safetensors_file.h"

namespace k3test::container {

struct ExpertTensorAt {
  std::string file;  // basename
  std::string path;
  std::string name;
  uint64_t begin = 0, end = 0;  // absolute byte range in the file
  int layer = -1, id = -1;
};

// "...model.layers.<L>.block_sparse_moe.experts.<E>.w{1,2,3}.weight_{packed,scale}"
// -> (L, E); false for any other name. (std::regex is avoided: GCC 12 warns
// inside <regex> under the sanitizers.)
inline bool matchExpertName(std::string_view name, int& layer, int& expert) {
  auto number = [](std::string_view& s, int& v) {
    size_t i = 0;
    v = 0;
    for (; i < s.size() && i < 9 && s[i] >= '0' && s[i] <= '9'; ++i) v = v * 10 + (s[i] - '0');
    s.remove_prefix(i);
    return i > 0;
  };
  auto literal = [](std::string_view& s, std::string_view lit) {
    if (s.substr(0, lit.size()) != lit) return false;
    s.remove_prefix(lit.size());
    return true;
  };
  const size_t at = name.find("model.layers.");
  if (at == std::string_view::npos) return false;
  std::string_view s = name.substr(at + 13);
  if (!number(s, layer) || !literal(s, ".block_sparse_moe.experts.") || !number(s, expert) ||
      !literal(s, ".w") || s.empty() || s[0] < '1' || s[0] > '3')
    return false;
  s.remove_prefix(1);
  return s == ".weight_packed" || s == ".weight_scale";
}

inline std::vector<ExpertTensorAt> expertTensors(const std::string& dir) {
  std::vector<ExpertTensorAt> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    auto f = k3::SafetensorsFile::open(e.path().string(), k3::SafetensorsFile::Access::HeaderOnly);
    for (const auto& t : f.tensors()) {
      int layer = 0, expert = 0;
      if (!matchExpertName(t.name, layer, expert)) continue;
      out.push_back({e.path().filename().string(), e.path().string(), t.name, f.dataOffset() + t.begin,
                     f.dataOffset() + t.end, layer, expert});
    }
  }
  return out;
}

// Header region [0, 8 + N) of every shard.
struct HeaderRegion {
  std::string file, path;
  uint64_t bytes = 0;
};
inline std::vector<HeaderRegion> headerRegions(const std::string& dir) {
  std::vector<HeaderRegion> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    auto f = k3::SafetensorsFile::open(e.path().string(), k3::SafetensorsFile::Access::HeaderOnly);
    out.push_back({e.path().filename().string(), e.path().string(), f.dataOffset()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.file < b.file; });
  return out;
}

inline uint8_t readByte(const std::string& path, uint64_t at) {
  FILE* f = std::fopen(path.c_str(), "rb");
  std::fseek(f, static_cast<long>(at), SEEK_SET);
  const int c = std::fgetc(f);
  std::fclose(f);
  return static_cast<uint8_t>(c);
}
inline void writeByte(const std::string& path, uint64_t at, uint8_t v) {
  FILE* f = std::fopen(path.c_str(), "r+b");
  std::fseek(f, static_cast<long>(at), SEEK_SET);
  std::fputc(v, f);
  std::fclose(f);
}

}  // namespace k3test::container
