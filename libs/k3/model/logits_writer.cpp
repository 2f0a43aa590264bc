#include "k3/model/logits_writer.h"

#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "k3/io/error.h"

namespace k3::model {

LogitsWriter::LogitsWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) failErrno(errno, path, "cannot create");
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".zst") == 0) {
    zstd_ = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(zstd_), ZSTD_c_compressionLevel, 3);
    out_.resize(ZSTD_CStreamOutSize());
  }
}

LogitsWriter::~LogitsWriter() {
  if (zstd_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
  if (f_) std::fclose(f_);
}

void LogitsWriter::put(const void* data, size_t n) {
  if (n && std::fwrite(data, 1, n, f_) != n) failErrno(errno, path_, "write failed");
}

void LogitsWriter::write(const float* values, size_t n) {
  static_assert(sizeof(float) == 4);
  // x86-64 is little-endian: the in-memory bytes are the file format.
  if (!zstd_) {
    put(values, n * sizeof(float));
    return;
  }
  ZSTD_inBuffer in{values, n * sizeof(float), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const size_t rc = ZSTD_compressStream2(static_cast<ZSTD_CCtx*>(zstd_), &out, &in, ZSTD_e_continue);
    if (ZSTD_isError(rc)) fail(ErrorKind::Io, path_, ": zstd: ", ZSTD_getErrorName(rc));
    put(out_.data(), out.pos);
  }
}

void LogitsWriter::close() {
  if (!f_) return;
  if (zstd_) {
    ZSTD_inBuffer in{nullptr, 0, 0};
    size_t left;
    do {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      left = ZSTD_compressStream2(static_cast<ZSTD_CCtx*>(zstd_), &out, &in, ZSTD_e_end);
      if (ZSTD_isError(left)) fail(ErrorKind::Io, path_, ": zstd: ", ZSTD_getErrorName(left));
      put(out_.data(), out.pos);
    } while (left != 0);
  }
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) failErrno(errno, path_, "close failed");
}

}  // namespace k3::model
