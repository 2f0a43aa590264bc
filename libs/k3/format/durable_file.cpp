#include "k3/format/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "k3/io/error.h"

namespace k3 {

std::string parentDirectory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string readWholeFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) fail(ErrorKind::Missing, path, ": file does not exist");
    failErrno(errno, path, "cannot open");
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      failErrno(e, path, "read failed");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void fsyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) failErrno(errno, dir, "cannot open directory");
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int e = errno;
    ::close(fd);
    failErrno(e, dir, "directory fsync failed");
  }
  ::close(fd);
}

void writeFileAtomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = cat(path, ".tmp-", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) failErrno(errno, tmp, "cannot create");
  auto bail = [&](int e, const char* what) {
    ::close(fd);
    ::unlink(tmp.c_str());
    failErrno(e, tmp, what);
  };
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      bail(errno, "write failed");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) bail(errno, "fsync failed");
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    failErrno(e, tmp, "close failed");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    failErrno(e, path, "rename failed");
  }
  fsyncDirectory(parentDirectory(path));
}

void copyFileAtomic(const std::string& src, const std::string& dst) {
  writeFileAtomic(dst, readWholeFile(src));
}

}  // namespace k3
