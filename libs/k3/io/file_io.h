// Small POSIX file helpers shared by readers: an owning (movable) descriptor and a
// positional read that retries short reads and EINTR.
// Thread-safety: a UniqueFd has one owner (move-only); preadFull is positional
// (pread), so threads may read one descriptor at once.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

struct UniqueFd {
  int fd = -1;
  UniqueFd() = default;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads up to `len` bytes at `offset`; returns fewer only at end of file.
// Throws k3::Error(Io) naming `path` on a read error.
size_t preadFull(int fd, void* buf, size_t len, uint64_t offset, const std::string& path);

}  // namespace k3
