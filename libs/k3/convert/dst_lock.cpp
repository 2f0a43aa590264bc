#include "k3/convert/dst_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "k3/format/expert_manifest.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"

namespace k3::convert {
namespace {

long pidIn(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

}  // namespace

DstLock::DstLock(const std::string& dst) : path_(dst + "/" + ExpertManifest::kLockName) {
  // A holder that is releasing unlinks the file while we may have opened it:
  // after taking the lock, make sure the name still points at our inode.
  for (int attempt = 0; attempt < 16; ++attempt) {
    UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644));
    if (fd.fd < 0) failErrno(errno, path_, "cannot create the lock file");
    struct stat mine {}, named {};
    if (::fstat(fd.fd, &mine) != 0) failErrno(errno, path_, "cannot stat");
    if (!S_ISREG(mine.st_mode)) fail(ErrorKind::Io, path_, ": lock file is not a regular file");
    if (::flock(fd.fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) failErrno(errno, path_, "cannot lock");
      const long pid = pidIn(fd.fd);
      fail(ErrorKind::Io, dst, ": in use by ", pid > 0 ? cat("PID ", pid) : std::string("another process"),
           " (another k3-repack holds ", path_, "); wait for it or use another DST");
    }
    if (::stat(path_.c_str(), &named) != 0 || named.st_ino != mine.st_ino || named.st_dev != mine.st_dev)
      continue;  // unlinked by the previous holder meanwhile: lock the new file
    previous_ = pidIn(fd.fd);
    const std::string text = cat(::getpid(), "\n");
    if (::ftruncate(fd.fd, 0) != 0 || ::pwrite(fd.fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
      failErrno(errno, path_, "cannot write the lock file");
    fd_ = fd.fd;
    fd.fd = -1;
    return;
  }
  fail(ErrorKind::Io, path_, ": lock file keeps changing (several writers racing); retry");
}

DstLock::~DstLock() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: a waiter then sees a new name
  ::close(fd_);
}

}  // namespace k3::convert
