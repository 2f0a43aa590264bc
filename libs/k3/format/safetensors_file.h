// SafetensorsFile: one .safetensors file opened for reading. The header is
// read with pread and validated (see safetensors_header.h); the data is either
// memory-mapped (Access::Mapped, zero-copy views) or left for the caller to
// pread at dataOffset() + tensor.begin (Access::HeaderOnly, used by streaming
// readers that own their I/O). Thread-safe for concurrent reads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "k3/format/safetensors_header.h"
#include "k3/io/mapped_file.h"

namespace k3 {

// The 8-byte little-endian header length N that starts a safetensors file
// of `fileSize` bytes open on `fd`. Throws Format naming `path` when the file
// is shorter than 8 bytes or N exceeds the rest of it; Io when unreadable.
uint64_t readSafetensorsHeaderLength(int fd, uint64_t fileSize, const std::string& path);

class SafetensorsFile {
 public:
  enum class Access { Mapped, HeaderOnly };

  // Throws k3::Error: Io if unreadable, Format if invalid (naming path/tensor).
  static SafetensorsFile open(const std::string& path, Access access = Access::Mapped);
  // A file whose header a checker has already read and validated (`header`
  // parsed from its first 8 + headerLength bytes, fileSize bytes in all):
  // opened HeaderOnly without reading it again. map() adds the mapping.
  static SafetensorsFile fromParsed(std::string path, uint64_t fileSize, uint64_t headerLength,
                                    SafetensorsHeader header);
  // Maps the data of a HeaderOnly file. Throws Format naming the file when it
  // is no longer fileSize() bytes (changed since its header was read).
  void map();

  const std::string& path() const { return path_; }
  uint64_t fileSize() const { return fileSize_; }
  uint64_t headerLength() const { return headerLength_; }    // N
  uint64_t dataOffset() const { return 8 + headerLength_; }  // absolute start of data
  uint64_t dataSize() const { return fileSize_ - dataOffset(); }

  const SafetensorsHeader& header() const { return header_; }
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }
  const TensorInfo* find(std::string_view name) const { return header_.find(name); }
  // Throws Missing naming the file and tensor.
  const TensorInfo& require(std::string_view name) const;

  // Mapped access only (throws Usage otherwise).
  std::span<const uint8_t> data(const TensorInfo& t) const;
  const MappedFile& mapping() const { return map_; }
  bool mapped() const { return map_.data() != nullptr || fileSize_ == 0; }

 private:
  std::string path_;
  uint64_t fileSize_ = 0;
  uint64_t headerLength_ = 0;
  SafetensorsHeader header_;
  MappedFile map_;
};

}  // namespace k3
