#include "k3/convert/shard_converter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "k3/codec/bf16.h"
#include "k3/codec/quantize.h"
#include "k3/convert/finite_scan.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/io/sha256.h"
#include "k3/io/sha256_ni.h"

namespace k3::convert {
namespace {

// Hashes the whole output file and each expert's byte range as the writer
// pipeline streams the file (one pipeline thread). Expert bytes feed both
// digests in one interleaved SHA-NI pass when the CPU has SHA-NI (k3-verify's
// Sha256Ni: about 25 % less CPU than two passes); OpenSSL EVP otherwise.
class ShardHasher {
 public:
  explicit ShardHasher(const std::vector<PlannedExpert>& experts)
      : experts_(experts), digests_(experts.size()), ni_(sha256NiAvailable()) {}

  void consume(uint64_t offset, const uint8_t* data, size_t len) {
    const uint64_t end = offset + len;
    uint64_t at = offset;  // bytes before `at` are hashed
    while (at < end) {
      if (next_ >= experts_.size() || experts_[next_].offset >= end) {
        fileOnly(data + (at - offset), end - at);
        break;
      }
      const PlannedExpert& e = experts_[next_];
      if (e.offset > at) {  // dense bytes (or header) before the expert
        fileOnly(data + (at - offset), e.offset - at);
        at = e.offset;
      }
      const uint64_t hi = std::min(end, e.offset + e.length);
      both(data + (at - offset), hi - at);
      countScaleEdges(e, at, hi, data + (at - offset));
      at = hi;
      if (e.offset + e.length > end) break;  // continues in the next chunk
      digests_[next_++] = finishExpert();
    }
  }
  bool complete() const { return next_ == experts_.size(); }
  uint64_t scaleEdgeBytes() const { return scaleEdges_; }
  const std::vector<std::string>& digests() const { return digests_; }
  std::string fileDigest() { return ni_ ? fileNi_.finishHex() : fileSw_.finishHex(); }

 private:
  void fileOnly(const uint8_t* p, size_t n) {
    if (ni_) fileNi_.update(p, n);
    else fileSw_.update(p, n);
  }
  void both(const uint8_t* p, size_t n) {
    if (ni_) {
      Sha256Ni::updatePair(fileNi_, p, expNi_, p, n);
    } else {
      fileSw_.update(p, n);
      expSw_.update(p, n);
    }
  }
  std::string finishExpert() {
    if (ni_) {
      std::string d = expNi_.finishHex();
      expNi_ = Sha256Ni();
      return d;
    }
    std::string d = expSw_.finishHex();
    expSw_.reset();
    return d;
  }
  // Spec §4: ue8m0 scales 0 and 255 decode differently across engines; real
  // K3 has none, so count them for the report. [lo, hi) lies inside expert e.
  void countScaleEdges(const PlannedExpert& e, uint64_t lo, uint64_t hi, const uint8_t* p) {
    uint64_t start = e.offset;
    for (int part = 0; part < 6; ++part) {
      const uint64_t partEnd = start + e.partBytes[part];
      if (part % 2 == 1) {
        const uint64_t a = std::max(lo, start), b = std::min(hi, partEnd);
        uint64_t n = 0;
        const uint8_t* q = p + (a - lo);
        for (uint64_t i = 0; i < (b > a ? b - a : 0); ++i) n += static_cast<uint8_t>(q[i] + 1) <= 1;  // 0 or 255
        scaleEdges_ += n;
      }
      start = partEnd;
    }
  }

  const std::vector<PlannedExpert>& experts_;
  std::vector<std::string> digests_;
  size_t next_ = 0;
  uint64_t scaleEdges_ = 0;
  bool ni_;
  Sha256Ni fileNi_, expNi_;
  Sha256 fileSw_, expSw_;
};

}  // namespace

ShardConverter::ShardConverter(ConverterOptions options)
    : opt_(options),
      pool_(options.chunkBytes, options.chunkCount),
      readBuffers_(options.readBlockBytes, options.readDepth),
      threads_(options.threads) {
  rowF32_.resize(threads_.size());
}

ShardConverter::~ShardConverter() = default;

void ShardConverter::stopIfAsked(const std::string& what) const {
  if (opt_.stop && opt_.stop->load(std::memory_order_relaxed))
    fail(ErrorKind::Internal, what, ": conversion stopped (another shard failed)");
}

ManifestShard ShardConverter::convert(const ShardPlan& plan, const std::string& dstDir,
                                      ProgressMeter& progress) {
  const SourceShard& src = *plan.source;
  const InputFile source = openInputFile(src.path, kShardInput);
  ConvertPhases* const ph = opt_.phases;
  std::vector<ByteRange> ranges;
  ranges.reserve(plan.steps.size());
  for (const PlanStep& step : plan.steps) ranges.push_back({step.srcOffset, step.srcBytes});
  PlannedReader in(source.fd.fd, src.path, source.size, std::move(ranges),
                   readsDirect(opt_.sourceIo, source.fd.fd, source.size), readBuffers_, ph ? &ph->read : nullptr);
  if (ph) {
    ph->readRequests += in.requests();
    ph->directShards += in.direct() ? 1 : 0;
  }

  ShardHasher hasher(plan.experts);
  SafetensorsWriter::Options wo;
  wo.directIo = opt_.directIo;
  wo.ioThreads = opt_.ioThreads;
  wo.pool = &pool_;
  wo.observer = [&hasher](uint64_t off, const uint8_t* p, size_t n) { hasher.consume(off, p, n); };
  wo.hashFile = false;  // the hasher digests the file together with the experts
  wo.phases = ph ? &ph->writer : nullptr;
  std::vector<TensorSpec> tensors = plan.tensors;
  SafetensorsWriter w(dstDir + "/" + plan.outputFile, std::move(tensors), wo);
  if (w.fileSize() != plan.fileSize || w.headerSize() != plan.header.size())
    fail(ErrorKind::Internal, plan.outputFile, ": writer layout disagrees with the plan");

  // Copied dense float tensors are scanned for NaN / Inf as they pass (plan.floats
  // is in source order, as the dense copies are).
  size_t nextFloat = 0;
  std::optional<FiniteScan> scan;
  size_t scanning = SIZE_MAX;
  auto checkFloats = [&](uint64_t off, const uint8_t* p, size_t n) {
    const uint64_t end = off + n;
    while (nextFloat < plan.floats.size()) {
      const FloatSpan& f = plan.floats[nextFloat];
      if (f.srcOffset >= end) break;
      const uint64_t lo = std::max(off, f.srcOffset), hi = std::min(end, f.srcOffset + f.bytes);
      if (scanning != nextFloat) {
        scan.emplace(f.dtype, f.tensor, src.path);
        scanning = nextFloat;
      }
      if (lo < hi) scan->feed(p + (lo - off), hi - lo);
      if (f.srcOffset + f.bytes > end) break;
      ++nextFloat;
    }
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    if (step.kind != PlanStep::Kind::Copy) {
      quantize(step, in, src.path, w, progress);
      continue;
    }
    uint64_t off = step.srcOffset, left = step.srcBytes;
    while (left > 0) {
      auto span = w.reserve(static_cast<size_t>(std::min<uint64_t>(left, SIZE_MAX)));
      in.read(span.data(), span.size());
      if (nextFloat < plan.floats.size()) {
        const PhaseScope t(ph ? &ph->floatScan : nullptr);
        checkFloats(off, span.data(), span.size());
      }
      w.commit(span.size());
      off += span.size();
      left -= span.size();
      progress.add(span.size());
      if (opt_.tick) opt_.tick();
      stopIfAsked(plan.outputFile);
    }
  }
  w.finish();
  if (!hasher.complete())
    fail(ErrorKind::Internal, plan.outputFile, ": expert hashing did not cover every expert");

  stats_.scaleEdgeBytes = hasher.scaleEdgeBytes();
  ManifestShard m;
  m.file = plan.outputFile;
  m.size = plan.fileSize;
  m.sha256 = hasher.fileDigest();
  m.dataOffset = plan.header.size();
  m.tensors = plan.tensors.size();
  m.source = {src.file, src.size, src.headerSha256};
  for (size_t i = 0; i < plan.experts.size(); ++i) {
    const PlannedExpert& e = plan.experts[i];
    m.experts.push_back({e.layer, e.id, e.offset, e.length, hasher.digests()[i]});
  }
  return m;
}

void ShardConverter::quantize(const PlanStep& step, PlannedReader& in, const std::string& srcPath,
                              SafetensorsWriter& w, ProgressMeter& progress) {
  const size_t rows = static_cast<size_t>(step.rows), cols = static_cast<size_t>(step.cols);
  const bool int4 = step.kind == PlanStep::Kind::QuantInt4;
  const size_t qRow = int4 ? cols / 2 : cols;
  const size_t sRow = int4 ? cols / 64 : 1;
  const size_t block = std::max<size_t>(1, std::min(rows, opt_.rowBlockBytes / (cols * 2)));
  if (bf16_.size() < block * cols) bf16_.resize(block * cols);
  if (qbuf_.size() < block * qRow) qbuf_.resize(block * qRow);
  scales_.assign(rows * sRow, 0.0f);
  FiniteScan finite(Dtype::BF16, step.tensor, srcPath);  // a NaN would quantize to garbage silently

  for (size_t r0 = 0; r0 < rows; r0 += block) {
    const size_t nr = std::min(block, rows - r0);
    ConvertPhases* const ph = opt_.phases;
    in.read(bf16_.data(), nr * cols * 2);
    {
      const PhaseScope t(ph ? &ph->floatScan : nullptr);
      finite.feed(reinterpret_cast<const uint8_t*>(bf16_.data()), nr * cols * 2);
    }
    // Rows go to the quantizers in batches: each call has a fixed dispatch
    // cost (the ISA check runs cpuid, a VM exit here), so never one per row.
    const size_t batch = std::max<size_t>(1, (size_t{2} << 20) / (cols * sizeof(float)));
    {
      const PhaseScope wall(ph ? &ph->quantizeWall : nullptr);
      threads_.run([&](size_t tid, size_t nt) {
        const PhaseScope busy(ph ? &ph->quantize : nullptr);
        std::vector<float>& f = rowF32_[tid];
        const size_t lo = nr * tid / nt, hi = nr * (tid + 1) / nt;
        for (size_t r = lo; r < hi; r += batch) {
          const size_t n = std::min(batch, hi - r);
          if (f.size() < n * cols) f.resize(n * cols);
          codec::bf16ToF32(bf16_.data() + r * cols, f.data(), n * cols);
          float* s = scales_.data() + (r0 + r) * sRow;
          if (int4)
            codec::quantizeInt4G64(f.data(), n, cols, qbuf_.data() + r * qRow, s);
          else
            codec::quantizeInt8Rows(f.data(), n, cols, reinterpret_cast<int8_t*>(qbuf_.data() + r * qRow), s);
        }
      });
    }
    w.write(qbuf_.data(), nr * qRow);
    progress.add(nr * cols * 2);
    if (opt_.tick) opt_.tick();
    stopIfAsked(step.tensor);
  }
  w.write(scales_.data(), scales_.size() * sizeof(float));  // little-endian f32 sidecar
}

}  // namespace k3::convert
