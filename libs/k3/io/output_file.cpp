#include "k3/io/output_file.h"

#include <dirent.h>
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

void fsyncDirectory(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) failErrno(errno, dir, "cannot open directory");
  if (::fsync(fd.fd) != 0 && errno != EINVAL) failErrno(errno, dir, "directory fsync failed");
}

FileId fileIdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino};
}

void checkOutputTarget(const std::string& path, std::span<const FileId> inputs) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // absent (or unreachable: the create reports it)
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::Usage, path, ": output exists and is not a regular file; refusing to replace it");
  const FileId id{st.st_dev, st.st_ino};
  for (const FileId& in : inputs)
    if (in == id) fail(ErrorKind::Usage, path, ": output is a file this run reads; refusing to overwrite it");
}

std::vector<FileId> regularFileIdsIn(const std::string& dir) {
  std::vector<FileId> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) out.push_back({st.st_dev, st.st_ino});
  }
  ::closedir(d);
  return out;
}

AtomicOutput::AtomicOutput(std::string path, std::span<const FileId> inputs) : path_(std::move(path)) {
  checkOutputTarget(path_, inputs);
  tmp_ = cat(path_, ".tmp-", ::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) failErrno(errno, tmp_, "cannot create");
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicOutput::bail(int err, const char* what) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  committed_ = true;  // nothing left to clean up
  failErrno(err, tmp_, what);
}

void AtomicOutput::write(const void* data, size_t n) {
  if (fd_ < 0) fail(ErrorKind::Internal, tmp_, ": write after commit or failure");
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      bail(errno, "write failed");
    }
    done += static_cast<size_t>(w);
  }
}

void AtomicOutput::commit() {
  if (fd_ < 0) fail(ErrorKind::Internal, tmp_, ": commit after commit or failure");
  if (::fsync(fd_) != 0) bail(errno, "fsync failed");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) bail(errno, "close failed");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp_.c_str());
    committed_ = true;
    failErrno(e, path_, "rename failed");
  }
  committed_ = true;
  fsyncDirectory(parentDirectory(path_));
}

void writeFileAtomic(const std::string& path, std::string_view bytes, std::span<const FileId> inputs) {
  AtomicOutput out(path, inputs);
  out.write(bytes);
  out.commit();
}

}  // namespace k3
