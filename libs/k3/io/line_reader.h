// LineReader: lines from a file descriptor (k3-run --chat's stdin), each at
// most cap.maxBytes: a line past the cap (`--chat < /dev/zero`) is a one-line
// Format error, not a string growing until the OOM killer. Not thread-safe.
#pragma once

#include <optional>
#include <string>

#include "k3/io/input_file.h"

namespace k3 {

class LineReader {
 public:
  LineReader(int fd, std::string origin, const InputCap& cap) : fd_(fd), origin_(std::move(origin)), cap_(cap) {}

  // The next line without its '\n' (a last line without one too); nullopt at
  // the end of the input.
  std::optional<std::string> next();

 private:
  void checkCap(size_t bytes) const;  // a line (or a partial one) of `bytes` must fit the cap

  int fd_;
  std::string origin_;
  InputCap cap_;
  std::string buf_;  // read, not yet returned
  size_t scanned_ = 0;
  bool eof_ = false;
};

}  // namespace k3
