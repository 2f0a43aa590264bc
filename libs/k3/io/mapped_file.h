// MappedFile: a read-only, whole-file memory mapping with madvise helpers.
// Move-only; unmaps on destruction. Thread-safe for concurrent reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace k3 {

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only (MAP_SHARED). Throws k3::Error(Io) naming the path.
  static MappedFile open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Files of 2 MiB or more are mapped at a 2 MiB-aligned address and advised
  // MADV_HUGEPAGE, so the page cache can hold and map them in 2 MiB pages.
  bool hugePagesAdvised() const;
  // Bytes of the mapping the kernel maps with 2 MiB page-cache pages now
  // (FilePmdMapped in /proc/self/smaps; 0 if unknown); of several mappings
  // in one read of smaps.
  uint64_t hugePageBytes() const;
  static uint64_t hugePageBytes(std::span<const MappedFile* const> files);

  // Page-aligned advice over [offset, offset+length) clipped to the file.
  void adviseWillNeed(size_t offset, size_t length) const;
  void adviseDontNeed(size_t offset, size_t length) const;
  void adviseSequential() const;
  void adviseRandom() const;

 private:
  void advise(size_t offset, size_t length, int advice) const;
  void reset();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace k3
