#include "k3/io/page_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "k3/io/error.h"
#include "k3/io/input_file.h"

namespace k3 {

ReadMode parseReadMode(const std::string& text, const char* flag) {
  if (text == "auto") return ReadMode::Auto;
  if (text == "buffered") return ReadMode::Buffered;
  if (text == "direct") return ReadMode::Direct;
  fail(ErrorKind::Usage, flag, " '", text, "': expected auto, buffered or direct");
}

double pageCacheFraction(int fd, uint64_t size) {
  if (size == 0) return 0;
  const size_t bytes = static_cast<size_t>(size);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return 0;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  double frac = 0;
  if (::mincore(map, bytes, vec.data()) == 0) {
    size_t resident = 0;
    for (unsigned char v : vec) resident += v & 1;
    frac = static_cast<double>(resident) / static_cast<double>(vec.size());
  }
  ::munmap(map, bytes);
  return frac;
}

double pageCacheFraction(const std::string& path) {
  InputFile f;
  try {
    f = openInputFile(path, kShardInput);
  } catch (const Error&) {
    return 0;  // not a readable regular file: the read itself reports it
  }
  return pageCacheFraction(f.fd.fd, f.size);
}

void dropFromPageCache(const std::string& path) {
  const InputFile f = openInputFile(path, kShardInput);
  const int rc = ::posix_fadvise(f.fd.fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) failErrno(rc, path, "cannot drop from the page cache");
}

namespace {
constexpr double kMostlyCached = 0.5;
}  // namespace

bool readsDirect(ReadMode mode, int fd, uint64_t size) {
  if (mode != ReadMode::Auto) return mode == ReadMode::Direct;
  return pageCacheFraction(fd, size) < kMostlyCached;
}

bool readsDirect(ReadMode mode, const std::string& path) {
  if (mode != ReadMode::Auto) return mode == ReadMode::Direct;
  return pageCacheFraction(path) < kMostlyCached;
}

}  // namespace k3
