// k3::Error: the one exception type of the library. Every message names the
// file (and tensor, expert, ...) and what was wrong, on one line; the kind lets
// callers and tests tell error classes apart without parsing text.
// Thread-safety: Error is a value (an exception, copied as one); nothing is
// shared, so any thread may throw and catch.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace k3 {

enum class ErrorKind {
  Usage,          // bad command line or API misuse
  Io,             // open/read/write/rename failed
  NoSpace,        // ENOSPC / EDQUOT / EFBIG while writing
  Format,         // malformed safetensors / JSON / tiktoken file
  Config,         // config.json missing keys or disagreeing with tensors
  Missing,        // a tensor / shard / file that must exist does not
  Duplicate,      // the same tensor name appears twice
  Mismatch,       // content disagrees with the manifest / source (hash, size)
  SourceChanged,  // the source snapshot changed under a resumed run
  Unsupported,    // valid input we do not handle (dtype, feature)
  Internal,       // a bug
};

const char* errorKindName(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// Concatenate anything streamable: k3::cat(path, ": tensor ", name, ": ...").
template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, const Args&... args) {
  throw Error(kind, cat(args...));
}

// Throws Io (or NoSpace for ENOSPC/EDQUOT/EFBIG) with strerror(err) appended:
// "<path>: <what>: <strerror>".
[[noreturn]] void failErrno(int err, const std::string& path, std::string_view what);

}  // namespace k3
