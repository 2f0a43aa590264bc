#include "k3/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3 {

MappedFile MappedFile::open(const std::string& path) {
  MappedFile m;
  m.path_ = path;
  const InputFile f = openInputFile(path, kShardInput);  // /dev/zero would map without end
  m.size_ = static_cast<size_t>(f.size);
  if (m.size_ > 0) {
    void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_SHARED, f.fd.fd, 0);
    if (p == MAP_FAILED) failErrno(errno, path, "cannot mmap");
    m.data_ = static_cast<const uint8_t*>(p);
  }
  // Closing the descriptor (f goes out of scope) keeps the mapping alive.
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::advise(size_t offset, size_t length, int advice) const {
  if (data_ == nullptr || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = offset / page * page;
  size_t end = std::min(size_, offset + length);
  if (end <= begin) return;
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, advice);
}

void MappedFile::adviseWillNeed(size_t offset, size_t length) const {
  advise(offset, length, MADV_WILLNEED);
}
void MappedFile::adviseDontNeed(size_t offset, size_t length) const {
  advise(offset, length, MADV_DONTNEED);
}
void MappedFile::adviseSequential() const { advise(0, size_, MADV_SEQUENTIAL); }
void MappedFile::adviseRandom() const { advise(0, size_, MADV_RANDOM); }

}  // namespace k3
