#include "k3/verify/source_dense.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "k3/codec/bf16.h"
#include "k3/codec/quantize.h"
#include "k3/codec/stored_form.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/verify/job_runner.h"

namespace k3::verify {
namespace {

enum class Stored { Copy, Int8, Int4 };

struct DenseJob {
  const ShardFacts* shard = nullptr;
  const TensorInfo* tensor = nullptr;
  const TensorInfo* sidecar = nullptr;  // quantized forms
  const SourceTensor* source = nullptr;
  const std::string* sourcePath = nullptr;
  Stored stored = Stored::Copy;
  uint64_t rows = 0, cols = 0;
};

bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// How the container stores `t` relative to its source, or false if neither a
// copy nor a quantization of it.
bool classify(const TensorInfo& t, const TensorInfo* qs, const SourceTensor& src, DenseJob& job) {
  if (!qs) {
    job.stored = Stored::Copy;
    return t.dtype == src.dtype && t.shape == src.shape;
  }
  if (t.dtype != Dtype::U8 || qs->dtype != Dtype::F32 || src.dtype != Dtype::BF16 || src.shape.size() != 2)
    return false;
  const uint64_t O = src.shape[0], I = src.shape[1];
  job.rows = O;
  job.cols = I;
  auto storedAs = [&](codec::StoredForm f) {
    return t.shape == codec::storedData(f, O, I).shape && qs->shape == codec::storedScales(f, O, I).shape;
  };
  if (storedAs(codec::StoredForm::Int8Rows)) {
    job.stored = Stored::Int8;
    return true;
  }
  if (I % codec::kInt4Group == 0 && storedAs(codec::StoredForm::Int4G64)) {
    job.stored = Stored::Int4;
    return true;
  }
  return false;
}

size_t firstDifference(const uint8_t* a, const uint8_t* b, size_t n) {
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

class DenseComparer {
 public:
  DenseComparer(const DenseJob& job, AlignedBuffers& buffers)
      : job_(job),
        buffers_(buffers),
        dst_(openInputFile(job.shard->path, kShardInput)),
        src_(openInputFile(*job.sourcePath, kShardInput)) {}

  // The first difference, or "" when equal. Counts the bytes read.
  std::string run() { return job_.stored == Stored::Copy ? compareCopy() : compareQuantized(); }
  uint64_t bytesRead() const { return read_; }

 private:
  void readExact(const InputFile& f, uint8_t* buf, size_t n, uint64_t at) {
    if (preadFull(f.fd.fd, buf, n, at, f.path) != n) fail(ErrorKind::Format, f.path, ": truncated at byte ", at);
    read_ += n;
  }

  std::string compareCopy() {
    const TensorInfo& t = *job_.tensor;
    const uint64_t base = job_.shard->dataOffset + t.begin, n = t.nbytes();
    uint8_t* a = buffers_.at(0);
    uint8_t* b = buffers_.at(1);
    for (uint64_t off = 0; off < n;) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(buffers_.bytesEach(), n - off));
      readExact(dst_, a, len, base + off);
      readExact(src_, b, len, job_.source->begin + off);
      const size_t d = firstDifference(a, b, len);
      if (d < len) return cat("byte ", off + d, " of the tensor differs from the source (a copy must be identical)");
      off += len;
    }
    return {};
  }

  std::string compareQuantized() {
    const bool int4 = job_.stored == Stored::Int4;
    const size_t cols = static_cast<size_t>(job_.cols), rows = static_cast<size_t>(job_.rows);
    const size_t qRow = int4 ? cols / 2 : cols, sRow = int4 ? cols / 64 : 1;
    // Row blocks of about one read buffer, no larger than the tensor (buffers are per tensor).
    const size_t block = std::min(rows, std::max<size_t>(1, buffers_.bytesEach() / (cols * 2)));
    std::vector<uint16_t> bf16(block * cols);
    std::vector<float> f32(block * cols), scales(block * sRow), haveScales(block * sRow);
    std::vector<uint8_t> q(block * qRow), have(block * qRow);
    const uint64_t qBase = job_.shard->dataOffset + job_.tensor->begin;
    const uint64_t sBase = job_.shard->dataOffset + job_.sidecar->begin;
    for (size_t r0 = 0; r0 < rows; r0 += block) {
      const size_t nr = std::min(block, rows - r0);
      readExact(src_, reinterpret_cast<uint8_t*>(bf16.data()), nr * cols * 2, job_.source->begin + r0 * cols * 2);
      codec::bf16ToF32(bf16.data(), f32.data(), nr * cols);
      if (int4) codec::quantizeInt4G64(f32.data(), nr, cols, q.data(), scales.data());
      else codec::quantizeInt8Rows(f32.data(), nr, cols, reinterpret_cast<int8_t*>(q.data()), scales.data());
      readExact(dst_, have.data(), nr * qRow, qBase + r0 * qRow);
      const size_t d = firstDifference(have.data(), q.data(), nr * qRow);
      if (d < nr * qRow)
        return cat("row ", r0 + d / qRow, " differs from the source re-quantized (", int4 ? "int4-g64" : "int8",
                   ", byte ", d % qRow, ")");
      readExact(dst_, reinterpret_cast<uint8_t*>(haveScales.data()), nr * sRow * 4, sBase + r0 * sRow * 4);
      if (std::memcmp(haveScales.data(), scales.data(), nr * sRow * 4) != 0)
        return cat(".qs scales of rows [", r0, ", ", r0 + nr, ") differ from the source re-quantized");
    }
    return {};
  }

  const DenseJob& job_;
  AlignedBuffers& buffers_;
  InputFile dst_, src_;
  uint64_t read_ = 0;
};

}  // namespace

uint64_t compareDenseWithSource(const SourceIndex& source, const ContainerFacts& facts, const HashOptions& opts,
                                VerifyReport& report) {
  std::vector<DenseJob> jobs;
  std::vector<uint64_t> weights;
  for (const ShardFacts& s : facts.shards) {
    if (!s.headerOk) continue;  // reported by the fast pass
    for (const TensorInfo& t : s.header.tensors) {
      ExpertName en;
      if (parseExpertName(t.name, en) || endsWith(t.name, codec::kScaleSidecarSuffix)) continue;  // experts: the hash pass
      const SourceTensor* src = source.find(t.name, facts.prefix);
      if (!src) {
        report.add(ProblemKind::Source, s.file, t.name, "dense tensor not found in the source snapshot");
        continue;
      }
      DenseJob job;
      job.shard = &s;
      job.tensor = &t;
      job.sidecar = s.header.find(codec::scaleSidecarName(t.name));
      job.source = src;
      job.sourcePath = &source.paths[src->shard];
      if (!classify(t, job.sidecar, *src, job)) {
        report.add(ProblemKind::Source, s.file, t.name,
                   cat("stored as ", dtypeName(t.dtype), " ", shapeText(t.shape), job.sidecar ? " + .qs" : "",
                       ": neither a copy nor a quantization of the source's ", dtypeName(src->dtype), " ",
                       shapeText(src->shape)));
        continue;
      }
      weights.push_back(src->end - src->begin);
      jobs.push_back(job);
    }
  }
  std::mutex mu;
  std::atomic<uint64_t> bytesRead{0};
  runJobs(weights, opts, [&](size_t j, AlignedBuffers& buffers) {
    const DenseJob& job = jobs[j];
    std::string what;
    ProblemKind kind = ProblemKind::Source;
    try {
      DenseComparer c(job, buffers);
      what = c.run();
      bytesRead += c.bytesRead();
    } catch (const Error& e) {
      what = e.what();
      kind = ProblemKind::Unreadable;
    }
    if (what.empty()) return;
    std::lock_guard<std::mutex> lock(mu);
    report.add(kind, job.shard->file, job.tensor->name, what);
  });
  return bytesRead.load();
}

}  // namespace k3::verify
