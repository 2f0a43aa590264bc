#include "k3/verify/hash_pass.h"

#include "k3/io/sha256_ni.h"
#include "k3/verify/block_reader.h"
#include "k3/verify/job_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "k3/format/safetensors_file.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/io/sha256.h"
#include "k3/io/thread_pool.h"

namespace fs = std::filesystem;

namespace k3::verify {
namespace {

// SHA-256 over SHA-NI when present (paired with the shard digest), else OpenSSL.
class Digest {
 public:
  void update(const uint8_t* p, size_t n) {
    if (ni_) ni_->update(p, n);
    else evp_.update(p, n);
  }
  // this->update(p, n) and other.update(p, n) together (one interleaved pass).
  void updateWith(Digest& other, const uint8_t* p, size_t n) {
    if (ni_ && other.ni_) {
      Sha256Ni::updatePair(*ni_, p, *other.ni_, p, n);
    } else {
      update(p, n);
      other.update(p, n);
    }
  }
  std::string finishHex() { return ni_ ? ni_->finishHex() : evp_.finishHex(); }

 private:
  std::optional<Sha256Ni> ni_ = sha256NiAvailable() ? std::optional<Sha256Ni>(Sha256Ni()) : std::nullopt;
  Sha256 evp_;
};

struct ExpertRange {
  const ManifestExpertFact* fact;
  Digest hash;
  bool done = false;
};

struct ShardJob {
  const ShardFacts* shard = nullptr;
  const ManifestShardFact* manifest = nullptr;
  std::vector<const ManifestExpertFact*> experts;  // sorted by begin
};

}  // namespace

uint64_t containerHashBytes(const ContainerFacts& facts) {
  if (!facts.manifest) return 0;
  uint64_t total = 0;
  for (const auto& s : facts.shards)
    for (const auto& m : facts.manifest->shards)
      if (m.file == s.file && s.regular) total += s.size;
  return total;
}

uint64_t hashContainer(const ContainerFacts& facts, const HashOptions& opts, VerifyReport& report) {
  if (!facts.manifest) return 0;
  // One pass over the manifest's shards and experts (K3: 93 x 83k), not one per shard.
  std::unordered_map<std::string_view, const ManifestShardFact*> manifestShard;
  for (const auto& m : facts.manifest->shards) manifestShard[m.file] = &m;  // the last, as before
  std::vector<ShardJob> jobs;
  std::unordered_map<std::string_view, size_t> jobOf;
  for (const auto& s : facts.shards) {
    if (!s.regular) continue;  // reported by the fast pass; reading a FIFO would block
    const auto m = manifestShard.find(s.file);
    if (m == manifestShard.end()) continue;  // reported by the fast pass
    jobOf[s.file] = jobs.size();
    jobs.push_back({&s, m->second, {}});
  }
  for (const auto& e : facts.manifest->experts) {
    const auto j = jobOf.find(e.file);
    if (j != jobOf.end() && e.begin <= e.end && e.end <= jobs[j->second].shard->size)
      jobs[j->second].experts.push_back(&e);
  }
  // Heaviest first by SHA-256 work: expert bytes are hashed twice.
  std::vector<uint64_t> weights;
  for (ShardJob& job : jobs) {
    std::sort(job.experts.begin(), job.experts.end(),
              [](const auto* a, const auto* b) { return a->begin < b->begin; });
    uint64_t w = job.shard->size;
    for (const auto* e : job.experts) w += e->end - e->begin;
    weights.push_back(w);
  }
  std::mutex mu;
  std::atomic<uint64_t> bytesRead{0};
  runJobs(weights, opts, [&](size_t j, AlignedBuffers& buffers) {
    const ShardJob& job = jobs[j];
    const std::string& file = job.shard->file;
    std::vector<Problem> found;
    try {
      BlockReader reader(job.shard->path, readsDirect(opts.io, job.shard->path), buffers);
      Digest whole;
      std::vector<ExpertRange> ranges;
      ranges.reserve(job.experts.size());
      for (const auto* e : job.experts) ranges.push_back({e, Digest(), false});
      size_t first = 0;  // ranges before `first` are finished
      uint64_t off = 0;
      HashPhases* const ph = opts.phases;
      for (BlockReader::Block b;;) {
        {
          const PhaseScope t(ph ? &ph->readWait : nullptr);
          b = reader.next();
        }
        if (b.size == 0) break;
        const PhaseScope t(ph ? &ph->hash : nullptr);
        const uint64_t blockEnd = off + b.size;
        uint64_t pos = off;  // the shard digest has consumed [0, pos)
        for (size_t r = first; r < ranges.size() && ranges[r].fact->begin < blockEnd; ++r) {
          ExpertRange& er = ranges[r];
          if (er.done) continue;
          const uint64_t lo = std::max(er.fact->begin, off), hi = std::min(er.fact->end, blockEnd);
          if (lo < hi && lo >= pos) {  // shard bytes up to lo alone, then both digests at once
            whole.update(b.data + (pos - off), lo - pos);
            er.hash.updateWith(whole, b.data + (lo - off), hi - lo);
            pos = hi;
          } else if (lo < hi) {  // overlapping ranges (a corrupt manifest): expert alone
            er.hash.update(b.data + (lo - off), hi - lo);
          }
          if (er.fact->end <= blockEnd) {
            er.done = true;
            const std::string got = er.hash.finishHex();
            if (got != er.fact->sha256)
              found.push_back({ProblemKind::Hash, file, "", er.fact->layer, er.fact->id,
                               cat("expert bytes [", er.fact->begin, ", ", er.fact->end, ") have SHA-256 ",
                                   got, ", manifest says ", er.fact->sha256)});
          }
        }
        whole.update(b.data + (pos - off), blockEnd - pos);
        while (first < ranges.size() && ranges[first].done) ++first;
        off = blockEnd;
        bytesRead += b.size;
        if (opts.progress) opts.progress->add(b.size);
      }
      if (off != job.shard->size)
        found.push_back({ProblemKind::Size, file, "", -1, -1,
                         cat("read ", off, " bytes but the file was ", job.shard->size, " bytes when opened")});
      const std::string got = whole.finishHex();
      if (got != job.manifest->sha256)
        found.push_back({ProblemKind::Hash, file, "", -1, -1,
                         cat("shard SHA-256 is ", got, ", manifest says ", job.manifest->sha256)});
      for (auto& er : ranges)
        if (!er.done)
          found.push_back({ProblemKind::Size, file, "", er.fact->layer, er.fact->id,
                           "expert byte range extends past the end of the file"});
    } catch (const Error& e) {
      found.push_back({ProblemKind::Unreadable, file, "", -1, -1, e.what()});
    }
    std::lock_guard<std::mutex> lock(mu);
    report.merge(std::move(found));
  });
  // The copied extra files are small: hash them inline.
  for (const auto& f : facts.manifest->files) {
    const std::string path = (fs::path(facts.dir) / f.file).string();
    InputFile in;
    try {
      in = openContainedFile(facts.dir, f.file, kHashedInput);
    } catch (const Error&) {
      continue;  // reported by the fast pass
    }
    const UniqueFd& fd = in.fd;
    Sha256 h;
    std::vector<uint8_t> buf(1 << 16);
    uint64_t off = 0;
    try {
      for (size_t n; (n = preadFull(fd.fd, buf.data(), buf.size(), off, path)) > 0; off += n) h.update(buf.data(), n);
    } catch (const Error& e) {
      report.add(ProblemKind::Unreadable, "", "", cat(f.file, ": ", e.what()));
      continue;
    }
    const std::string got = h.finishHex();
    if (got != f.sha256)
      report.add(ProblemKind::Hash, "", "", cat("copied file ", f.file, " has SHA-256 ", got, ", manifest says ", f.sha256));
  }
  return bytesRead.load();
}

uint64_t sourceHashBytes(const ContainerFacts& facts) {
  if (!facts.manifest) return 0;
  uint64_t total = 0;
  for (const auto& e : facts.manifest->experts) total += e.end - e.begin;
  return total;
}

namespace {

struct SourceJob {
  const ManifestExpertFact* fact;
  size_t shard = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // absolute, in container part order
  uint64_t bytes = 0;
};

}  // namespace

uint64_t hashSource(const std::string& srcDir, const SourceIndex& source, const ContainerFacts& facts,
                    const HashOptions& opts, VerifyReport& report) {
  if (!facts.manifest) return 0;
  const std::vector<std::string>& paths = source.paths;
  const std::vector<std::string>& files = source.files;
  // Each source shard is still the one the container was made from (size, header bytes).
  for (const auto& s : facts.manifest->shards) {
    if (s.sourceFile.empty()) continue;
    const std::string path = (fs::path(srcDir) / s.sourceFile).string();
    // A source snapshot may be an HF cache of symlinks into blobs/: the name
    // must stay inside SRC, its target need only be a regular file.
    InputFile in;
    try {
      if (!isConfinedName(s.sourceFile)) fail(ErrorKind::Format, path, ": not a file name inside ", srcDir);
      in = openInputFile(path, kShardInput, true);
    } catch (const Error& e) {
      report.add(ProblemKind::Source, s.file, "",
                 e.kind() == ErrorKind::Missing ? cat("source shard ", s.sourceFile, " is missing")
                                                : cat("source shard ", s.sourceFile, ": ", e.what()));
      continue;
    }
    const uint64_t size = in.size;
    if (size != s.sourceSize) {
      report.add(ProblemKind::Source, s.file, "",
                 cat("source shard ", s.sourceFile, " is ", size, " bytes, manifest says ", s.sourceSize));
      continue;
    }
    const UniqueFd& fd = in.fd;
    uint64_t n = 0;
    try {
      n = readSafetensorsHeaderLength(fd.fd, size, path);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Format) throw;
      continue;  // reported below
    }
    std::vector<uint8_t> head(static_cast<size_t>(8 + n));
    if (preadFull(fd.fd, head.data(), head.size(), 0, path) != head.size()) continue;
    const std::string got = Sha256::hexOf(head.data(), head.size());
    if (got != s.sourceHeaderSha256)
      report.add(ProblemKind::Source, s.file, "",
                 cat("source shard ", s.sourceFile, " header has SHA-256 ", got, ", manifest says ",
                     s.sourceHeaderSha256, " (source changed since conversion)"));
  }
  std::vector<SourceJob> jobs;
  for (const auto& m : facts.manifest->experts) {
    SourceJob job{&m, 0, {}, 0};
    bool ok = true;
    for (int p = 0; p < kExpertParts && ok; ++p) {
      const auto part = static_cast<ExpertPart>(p);
      const SourceTensor* found = source.find(expertTensorName(facts.prefix, m.layer, m.id, part), facts.prefix);
      if (!found) {
        report.add(ProblemKind::Source, "", expertTensorName(facts.prefix, m.layer, m.id, part),
                   "expert tensor not found in the source snapshot", m.layer, m.id);
        ok = false;
        break;
      }
      const SourceTensor& st = *found;
      if (p > 0 && st.shard != job.shard) {
        report.add(ProblemKind::Source, files[st.shard], "", "expert split across source shards", m.layer, m.id);
        ok = false;
        break;
      }
      job.shard = st.shard;
      if (!job.ranges.empty() && job.ranges.back().second == st.begin) job.ranges.back().second = st.end;
      else job.ranges.emplace_back(st.begin, st.end);
      job.bytes += st.end - st.begin;
    }
    if (ok) jobs.push_back(std::move(job));
  }
  // Group into runs per shard in offset order so reads stay sequential.
  std::sort(jobs.begin(), jobs.end(), [](const SourceJob& a, const SourceJob& b) {
    return std::make_pair(a.shard, a.ranges.front().first) < std::make_pair(b.shard, b.ranges.front().first);
  });
  std::vector<std::vector<size_t>> runs;
  std::vector<uint64_t> weights;
  const uint64_t runTarget = uint64_t{256} << 20;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (runs.empty() || jobs[runs.back().front()].shard != jobs[i].shard || weights.back() >= runTarget) {
      runs.emplace_back();
      weights.push_back(0);
    }
    runs.back().push_back(i);
    weights.back() += jobs[i].bytes;
  }
  std::mutex mu;
  std::atomic<uint64_t> bytesRead{0};
  runJobs(weights, opts, [&](size_t r, AlignedBuffers& buffers) {
    const size_t bufSize = buffers.bytesEach();
    uint8_t* const buf = buffers.at(0);
    std::vector<Problem> found;
    const std::string& file = files[jobs[runs[r].front()].shard];
    const std::string& path = paths[jobs[runs[r].front()].shard];
    InputFile in;
    std::string openError;
    try {
      in = openInputFile(path, kShardInput);
    } catch (const Error& e) {
      openError = e.what();
    }
    const UniqueFd& fd = in.fd;
    if (!openError.empty()) {
      found.push_back({ProblemKind::Unreadable, file, "", -1, -1, cat("cannot open source shard: ", openError)});
    } else {
      for (size_t j : runs[r]) {
        const SourceJob& job = jobs[j];
        Sha256 h;
        try {
          bool shortRead = false;
          for (auto [b, e] : job.ranges) {
            for (uint64_t off = b; off < e && !shortRead;) {
              const size_t want = static_cast<size_t>(std::min<uint64_t>(bufSize, e - off));
              size_t n = 0;
              {
                const PhaseScope t(opts.phases ? &opts.phases->readWait : nullptr);
                n = preadFull(fd.fd, buf, want, off, path);
              }
              {
                const PhaseScope t(opts.phases ? &opts.phases->hash : nullptr);
                h.update(buf, n);
              }
              off += n;
              bytesRead += n;
              if (opts.progress) opts.progress->add(n);
              if (n < want) shortRead = true;
            }
          }
          const std::string got = h.finishHex();
          if (shortRead)
            found.push_back({ProblemKind::Source, file, "", job.fact->layer, job.fact->id, "source shard is truncated"});
          else if (got != job.fact->sha256)
            found.push_back({ProblemKind::Source, file, "", job.fact->layer, job.fact->id,
                             cat("source expert bytes have SHA-256 ", got, ", manifest says ", job.fact->sha256)});
        } catch (const Error& e) {
          found.push_back({ProblemKind::Unreadable, file, "", job.fact->layer, job.fact->id, e.what()});
        }
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    report.merge(std::move(found));
  });
  return bytesRead.load();
}

}  // namespace k3::verify
