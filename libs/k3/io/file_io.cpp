#include "k3/io/file_io.h"

#include <cerrno>

#include "k3/io/error.h"

namespace k3 {

size_t preadFull(int fd, void* buf, size_t len, uint64_t offset, const std::string& path) {
  auto* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      failErrno(errno, path, "read failed");
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

}  // namespace k3
