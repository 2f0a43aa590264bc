#include "k3/model/logits_writer.h"

#include <zstd.h>

#include "k3/io/error.h"

namespace k3::model {

LogitsWriter::LogitsWriter(const std::string& path, std::span<const FileId> inputs)
    : path_(path), out_(std::make_unique<AtomicOutput>(path, inputs)) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".zst") == 0) {
    zstd_ = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(zstd_), ZSTD_c_compressionLevel, 3);
    buf_.resize(ZSTD_CStreamOutSize());
  }
}

LogitsWriter::~LogitsWriter() {
  if (zstd_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

void LogitsWriter::write(const float* values, size_t n) {
  static_assert(sizeof(float) == 4);
  if (!out_) fail(ErrorKind::Internal, path_, ": write after close");
  // x86-64 is little-endian: the in-memory bytes are the file format.
  if (!zstd_) {
    out_->write(values, n * sizeof(float));
    return;
  }
  ZSTD_inBuffer in{values, n * sizeof(float), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{buf_.data(), buf_.size(), 0};
    const size_t rc = ZSTD_compressStream2(static_cast<ZSTD_CCtx*>(zstd_), &out, &in, ZSTD_e_continue);
    if (ZSTD_isError(rc)) fail(ErrorKind::Io, path_, ": zstd: ", ZSTD_getErrorName(rc));
    out_->write(buf_.data(), out.pos);
  }
}

void LogitsWriter::close() {
  if (!out_) return;
  if (zstd_) {
    ZSTD_inBuffer in{nullptr, 0, 0};
    size_t left;
    do {
      ZSTD_outBuffer out{buf_.data(), buf_.size(), 0};
      left = ZSTD_compressStream2(static_cast<ZSTD_CCtx*>(zstd_), &out, &in, ZSTD_e_end);
      if (ZSTD_isError(left)) fail(ErrorKind::Io, path_, ": zstd: ", ZSTD_getErrorName(left));
      out_->write(buf_.data(), out.pos);
    } while (left != 0);
  }
  std::unique_ptr<AtomicOutput> out = std::move(out_);
  out->commit();
}

}  // namespace k3::model
