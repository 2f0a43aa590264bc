#include "k3/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "k3/io/error.h"

namespace k3 {
namespace {

const char* fileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

std::string realPathOrEmpty(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

}  // namespace

InputFile openInputFile(const std::string& path, const InputCap& cap, bool missingIsMissing) {
  InputFile f;
  f.path = path;
  // O_NONBLOCK: opening a FIFO without a writer returns at once (to be refused below).
  f.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (f.fd.fd < 0) {
    if (errno == ENOENT && missingIsMissing) fail(ErrorKind::Missing, path, ": file does not exist");
    failErrno(errno, path, "cannot open");
  }
  struct stat st {};
  if (::fstat(f.fd.fd, &st) != 0) failErrno(errno, path, "cannot stat");
  if (!S_ISREG(st.st_mode))
    fail(ErrorKind::Format, path, ": ", cap.what, " is ", fileTypeName(st.st_mode), ", not a regular file");
  f.size = static_cast<uint64_t>(st.st_size);
  if (f.size > cap.maxBytes)
    fail(ErrorKind::Format, path, ": ", cap.what, " is ", f.size, " bytes, more than the limit of ",
         cap.maxBytes, " bytes");
  f.id = {st.st_dev, st.st_ino};
  // Regular-file reads never block; clear the flag so later users see a plain descriptor.
  const int flags = ::fcntl(f.fd.fd, F_GETFL);
  if (flags >= 0) ::fcntl(f.fd.fd, F_SETFL, flags & ~O_NONBLOCK);
  return f;
}

void readInputInto(const InputFile& f, char* buf) {
  if (preadFull(f.fd.fd, buf, f.size, 0, f.path) != f.size)
    fail(ErrorKind::Format, f.path, ": file shrank while being read");
  char extra;
  if (preadFull(f.fd.fd, &extra, 1, f.size, f.path) != 0)
    fail(ErrorKind::Format, f.path, ": file grew while being read");
}

std::string readInputFile(const std::string& path, const InputCap& cap) {
  const InputFile f = openInputFile(path, cap, true);
  std::string out(f.size, '\0');
  readInputInto(f, out.data());
  return out;
}

std::string readStreamCapped(int fd, const std::string& origin, const InputCap& cap) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      failErrno(errno, origin, "read failed");
    }
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > cap.maxBytes)
      fail(ErrorKind::Format, origin, ": ", cap.what, " is more than the limit of ", cap.maxBytes, " bytes");
    out.append(buf, static_cast<size_t>(n));
  }
}

bool isConfinedName(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string_view::npos) return false;
  size_t pos = 0;
  while (pos <= name.size()) {
    size_t end = name.find('/', pos);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(pos, end - pos);
    if (part.empty() || part == "." || part == "..") return false;
    pos = end + 1;
  }
  return true;
}

InputFile openContainedFile(const std::string& dir, std::string_view name, const InputCap& cap) {
  const std::string path = dir + "/" + std::string(name);
  if (!isConfinedName(name))
    fail(ErrorKind::Format, path, ": '", name, "' is not a file name inside ", dir,
         " (absolute, '..', or empty component)");
  const std::string root = realPathOrEmpty(dir);
  const std::string real = realPathOrEmpty(path);
  if (!root.empty() && !real.empty() && real.compare(0, root.size() + 1, root + "/") != 0)
    fail(ErrorKind::Format, path, ": resolves to ", real, ", outside ", dir);
  InputFile f = openInputFile(path, cap, true);
  // What was opened, not what the name said a moment ago (a swapped symlink).
  const std::string opened = realPathOrEmpty("/proc/self/fd/" + std::to_string(f.fd.fd));
  if (!root.empty() && !opened.empty() && opened.compare(0, root.size() + 1, root + "/") != 0)
    fail(ErrorKind::Format, path, ": resolves to ", opened, ", outside ", dir);
  return f;
}

}  // namespace k3
