// LogitsWriter: appends rows of little-endian f32 logits to a file, through a
// zstd stream when the file name ends in ".zst" (what --logits-out writes and
// what tools compare to the numpy reference's [positions × vocab] output).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace k3::model {

class LogitsWriter {
 public:
  explicit LogitsWriter(const std::string& path);
  ~LogitsWriter();
  LogitsWriter(const LogitsWriter&) = delete;
  LogitsWriter& operator=(const LogitsWriter&) = delete;

  void write(const float* values, size_t n);
  void close();  // flushes; throws k3::Error(Io) on failure

 private:
  void put(const void* data, size_t n);

  std::string path_;
  FILE* f_ = nullptr;
  void* zstd_ = nullptr;  // ZSTD_CCtx* when compressing
  std::vector<char> out_;
};

}  // namespace k3::model
