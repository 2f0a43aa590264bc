// LogitsWriter: appends rows of little-endian f32 logits to a file, through a
// zstd stream when the file name ends in ".zst" (what --logits-out writes and
// what tools compare to the numpy reference's [positions × vocab] output).
// The file appears only at close() (k3::AtomicOutput: temp, fsync, rename);
// a run that fails or is dropped before close() leaves no partial file. The
// target may not be one of `inputs` (the container's files) nor a special file.
// Thread-safety: not thread-safe; one writer per output file.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "k3/io/output_file.h"

namespace k3::model {

class LogitsWriter {
 public:
  explicit LogitsWriter(const std::string& path, std::span<const FileId> inputs = {});
  ~LogitsWriter();
  LogitsWriter(const LogitsWriter&) = delete;
  LogitsWriter& operator=(const LogitsWriter&) = delete;

  void write(const float* values, size_t n);
  void close();  // flushes and publishes; throws k3::Error(Io / NoSpace) on failure

 private:
  std::string path_;
  std::unique_ptr<AtomicOutput> out_;
  void* zstd_ = nullptr;  // ZSTD_CCtx* when compressing
  std::vector<char> buf_;
};

}  // namespace k3::model
