#include "k3/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3 {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// The file mapped at a 2 MiB-aligned address: file offset and address agree
// modulo 2 MiB, which the kernel needs to map a huge page-cache folio with
// one page-table entry. A larger reservation is cut down to the mapping.
const uint8_t* mapAligned(int fd, size_t size, const std::string& path) {
  const size_t reserve = size >= kHugePage ? size + kHugePage : size;
  void* r = ::mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) failErrno(errno, path, "cannot reserve address space to map");
  auto* base = static_cast<uint8_t*>(r);
  uint8_t* at = base;
  if (reserve > size) {
    const uintptr_t a = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) / kHugePage * kHugePage;
    at = reinterpret_cast<uint8_t*>(a);
    if (at > base) ::munmap(base, static_cast<size_t>(at - base));
    if (at + size < base + reserve) ::munmap(at + size, static_cast<size_t>(base + reserve - (at + size)));
  }
  void* p = ::mmap(at, size, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::munmap(at, size);
    failErrno(err, path, "cannot mmap");
  }
  return static_cast<const uint8_t*>(p);
}

}  // namespace

MappedFile MappedFile::open(const std::string& path) {
  MappedFile m;
  m.path_ = path;
  const InputFile f = openInputFile(path, kShardInput);  // /dev/zero would map without end
  m.size_ = static_cast<size_t>(f.size);
  if (m.size_ > 0) {
    m.data_ = mapAligned(f.fd.fd, m.size_, path);
    // 2 MiB pages where the page cache can give them: weights are streamed
    // once per token, and with 4 KiB pages the routed experts were read at
    // half the rate of the same kernel over huge pages (docs/K3_RUN.md,
    // session 19). Only the page size changes, never the bytes.
    if (m.size_ >= kHugePage) ::madvise(const_cast<uint8_t*>(m.data_), m.size_, MADV_HUGEPAGE);
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

namespace {

// One pass over /proc/self/smaps (each read of it walks every mapping's
// pages): for each address in `starts`, the text after `key` in the entry of
// the mapping that starts there ("FilePmdMapped:" in kB, or the "VmFlags:"
// line), empty if there is none.
std::vector<std::string> smapsFields(std::span<const void* const> starts, const std::string& key) {
  std::vector<std::string> heads, out(starts.size());
  for (const void* a : starts) {
    char head[32];
    std::snprintf(head, sizeof head, "%lx-", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(a)));
    heads.emplace_back(head);
  }
  std::ifstream in("/proc/self/smaps");
  std::string line;
  size_t inside = starts.size();  // the entry being read is starts[inside] (none: size())
  while (std::getline(in, line)) {
    const bool isHeader = !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
                          line.find('-') != std::string::npos && line.find(':') > line.find('-');
    if (isHeader) {
      inside = starts.size();
      for (size_t i = 0; i < heads.size(); ++i)
        if (line.rfind(heads[i], 0) == 0) inside = i;
    } else if (inside < starts.size() && line.rfind(key, 0) == 0) {
      out[inside] = line.substr(key.size());
    }
  }
  return out;
}

}  // namespace

bool MappedFile::hugePagesAdvised() const {
  if (data_ == nullptr) return false;
  const void* start = data_;
  std::istringstream flags(smapsFields({&start, 1}, "VmFlags:")[0]);
  for (std::string f; flags >> f;)
    if (f == "hg") return true;
  return false;
}

uint64_t MappedFile::hugePageBytes() const {
  const MappedFile* self = this;
  return hugePageBytes({&self, 1});
}

uint64_t MappedFile::hugePageBytes(std::span<const MappedFile* const> files) {
  std::vector<const void*> starts;
  for (const MappedFile* f : files)
    if (f->data_ != nullptr) starts.push_back(f->data_);
  uint64_t bytes = 0;
  for (const std::string& kb : smapsFields(starts, "FilePmdMapped:"))
    if (!kb.empty()) bytes += std::strtoull(kb.c_str(), nullptr, 10) * 1024;
  return bytes;
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
