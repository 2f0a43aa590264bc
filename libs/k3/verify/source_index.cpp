#include "k3/verify/source_index.h"

#include <algorithm>
#include <filesystem>

#include "k3/format/safetensors_file.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"

namespace fs = std::filesystem;

namespace k3::verify {

const SourceTensor* SourceIndex::find(const std::string& name, std::string_view containerPrefix) const {
  auto it = where.find(name);
  if (it != where.end()) return &it->second;
  std::string other;
  if (containerPrefix.empty()) other = std::string(kLanguageModelPrefix) + name;
  else if (name.compare(0, containerPrefix.size(), containerPrefix) == 0) other = name.substr(containerPrefix.size());
  else return nullptr;
  it = where.find(other);
  return it == where.end() ? nullptr : &it->second;
}

SourceIndex scanSource(const std::string& srcDir, VerifyReport& report) {
  std::error_code ec;
  if (!fs::is_directory(srcDir, ec)) fail(ErrorKind::Io, srcDir, ": source is not a readable directory");
  SourceIndex idx;
  for (const auto& entry : fs::directory_iterator(srcDir, ec))
    if (entry.path().extension() == ".safetensors") idx.paths.push_back(entry.path().string());
  std::sort(idx.paths.begin(), idx.paths.end());
  for (size_t i = 0; i < idx.paths.size(); ++i) {
    idx.files.push_back(fs::path(idx.paths[i]).filename().string());
    try {
      auto f = SafetensorsFile::open(idx.paths[i], SafetensorsFile::Access::HeaderOnly);
      for (const auto& t : f.tensors())
        idx.where.emplace(t.name, SourceTensor{i, f.dataOffset() + t.begin, f.dataOffset() + t.end, t.dtype, t.shape});
    } catch (const Error& e) {
      report.add(ProblemKind::Source, idx.files.back(), "", cat("source shard unusable: ", e.what()));
    }
  }
  return idx;
}

}  // namespace k3::verify
