#include "k3/format/safetensors_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"

namespace k3 {
namespace {

void preadExact(int fd, void* buf, size_t len, uint64_t offset, const std::string& path) {
  if (preadFull(fd, buf, len, offset, path) != len)
    fail(ErrorKind::Format, path, ": unexpected end of file at byte ", offset);
}

}  // namespace

uint64_t readSafetensorsHeaderLength(int fd, uint64_t fileSize, const std::string& path) {
  if (fileSize < 8)
    fail(ErrorKind::Format, path, ": truncated: ", fileSize, " bytes, shorter than the 8-byte header length");
  unsigned char lenBytes[8];
  preadExact(fd, lenBytes, 8, 0, path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | lenBytes[i];
  if (n > fileSize - 8)
    fail(ErrorKind::Format, path, ": header length ", n, " exceeds the file size (", fileSize, " bytes)");
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path, Access access) {
  SafetensorsFile f;
  f.path_ = path;
  const InputFile in = openInputFile(path, kShardInput);  // a FIFO or device is refused here
  f.fileSize_ = in.size;
  const uint64_t n = readSafetensorsHeaderLength(in.fd.fd, f.fileSize_, path);
  if (n > kMaxSafetensorsHeader)
    fail(ErrorKind::Format, path, ": header length ", n, " exceeds the limit of ",
         kMaxSafetensorsHeader, " bytes");
  if (n < 2) fail(ErrorKind::Format, path, ": header length ", n, " is too small for JSON");
  f.headerLength_ = n;
  std::string json(n, '\0');
  preadExact(in.fd.fd, json.data(), n, 8, path);
  f.header_ = parseSafetensorsHeader(json, f.fileSize_ - 8 - n, path);
  if (access == Access::Mapped) f.map_ = MappedFile::open(path);
  return f;
}

SafetensorsFile SafetensorsFile::fromParsed(std::string path, uint64_t fileSize, uint64_t headerLength,
                                            SafetensorsHeader header) {
  SafetensorsFile f;
  f.path_ = std::move(path);
  f.fileSize_ = fileSize;
  f.headerLength_ = headerLength;
  f.header_ = std::move(header);
  return f;
}

void SafetensorsFile::map() {
  MappedFile m = MappedFile::open(path_);
  if (m.size() != fileSize_)
    fail(ErrorKind::Format, path_, ": is ", m.size(), " bytes, was ", fileSize_,
         " bytes when its header was checked (changed meanwhile)");
  map_ = std::move(m);
}

const TensorInfo& SafetensorsFile::require(std::string_view name) const {
  const TensorInfo* t = find(name);
  if (!t) fail(ErrorKind::Missing, path_, ": tensor '", name, "' is missing");
  return *t;
}

std::span<const uint8_t> SafetensorsFile::data(const TensorInfo& t) const {
  if (!map_.data() && t.nbytes() > 0)
    fail(ErrorKind::Usage, path_, ": tensor '", t.name, "': file opened without a mapping");
  if (t.nbytes() == 0) return {};
  return {map_.data() + dataOffset() + t.begin, t.nbytes()};
}

}  // namespace k3
