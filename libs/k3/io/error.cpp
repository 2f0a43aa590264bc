#include "k3/io/error.h"

#include <cerrno>
#include <cstring>

namespace k3 {

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Usage: return "usage";
    case ErrorKind::Io: return "io";
    case ErrorKind::NoSpace: return "no-space";
    case ErrorKind::Format: return "format";
    case ErrorKind::Config: return "config";
    case ErrorKind::Missing: return "missing";
    case ErrorKind::Duplicate: return "duplicate";
    case ErrorKind::Mismatch: return "mismatch";
    case ErrorKind::SourceChanged: return "source-changed";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Internal: return "internal";
  }
  return "unknown";
}

void failErrno(int err, const std::string& path, std::string_view what) {
  const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
  throw Error(full ? ErrorKind::NoSpace : ErrorKind::Io,
              cat(path, ": ", what, ": ", std::strerror(err)));
}

}  // namespace k3
