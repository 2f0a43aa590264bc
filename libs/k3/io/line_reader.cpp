#include "k3/io/line_reader.h"

#include <unistd.h>

#include <cerrno>

#include "k3/io/error.h"

namespace k3 {

void LineReader::checkCap(size_t bytes) const {
  if (bytes > cap_.maxBytes)
    fail(ErrorKind::Format, origin_, ": a ", cap_.what, " is more than the limit of ", cap_.maxBytes, " bytes");
}

std::optional<std::string> LineReader::next() {
  for (;;) {
    const size_t nl = buf_.find('\n', scanned_);
    if (nl != std::string::npos) {
      checkCap(nl);
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      scanned_ = 0;
      return line;
    }
    scanned_ = buf_.size();
    checkCap(buf_.size());
    if (eof_) {
      if (buf_.empty()) return std::nullopt;
      std::string line;
      line.swap(buf_);
      scanned_ = 0;
      return line;
    }
    char chunk[1 << 16];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      failErrno(errno, origin_, "read failed");
    }
    if (n == 0) eof_ = true;
    else buf_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace k3
