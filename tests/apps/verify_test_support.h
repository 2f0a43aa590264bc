// Locating expert tensors in a directory of safetensors shards by name (a
// regex on the tensor names, independent of k3's tensor inventory), for the
// k3-verify corruption tests.
#pragma once

#include <filesystem>
#include <regex>
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

inline std::vector<ExpertTensorAt> expertTensors(const std::string& dir) {
  static const std::regex re(R"(model\.layers\.(\d+)\.block_sparse_moe\.experts\.(\d+)\.w[123]\.weight_(packed|scale)$)");
  std::vector<ExpertTensorAt> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    auto f = k3::SafetensorsFile::open(e.path().string(), k3::SafetensorsFile::Access::HeaderOnly);
    for (const auto& t : f.tensors()) {
      std::smatch m;
      if (!std::regex_search(t.name, m, re)) continue;
      out.push_back({e.path().filename().string(), e.path().string(), t.name, f.dataOffset() + t.begin,
                     f.dataOffset() + t.end, std::stoi(m[1]), std::stoi(m[2])});
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
