// VerifyReport: what k3-verify found. One Problem per defect, each naming the
// shard, tensor and expert it concerns; rendered as one text line per problem
// or as a JSON machine report. Not thread-safe: hashing threads collect their
// problems locally and the caller merges them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::verify {

// Coarse problem classes (stable strings in the JSON report).
enum class ProblemKind {
  Unreadable,   // a file could not be opened or read
  Header,       // a shard header does not parse or validate (spec §3.2)
  Size,         // a file size or byte count is not what it must be
  Index,        // model.safetensors.index.json disagrees with the headers
  Config,       // config.json missing or unusable
  Missing,      // a tensor / shard / expert the config implies is absent
  Unexpected,   // a tensor nothing implies
  Dtype,        // wrong dtype
  Shape,        // wrong shape
  Sidecar,      // a .qs sidecar missing, misplaced or of the wrong shape
  Layout,       // tensors not in container order / experts not contiguous
  Manifest,     // k3-manifest.json disagrees with the container
  Hash,         // SHA-256 of an expert or shard differs from the manifest
  Source,       // the source snapshot's bytes differ from the manifest
};
const char* problemKindName(ProblemKind kind);

struct Problem {
  ProblemKind kind = ProblemKind::Header;
  std::string shard;   // basename, empty if not about one shard
  std::string tensor;  // empty if not about one tensor
  int layer = -1;      // expert (layer, id); -1 if not about an expert
  int expert = -1;
  std::string what;    // what is wrong, one line

  std::string line() const;  // "[hash] shard X: expert (layer 3, id 7): ..."
};

struct VerifySummary {
  std::string mode;           // "fast", "full", "full+source", ...
  uint64_t shards = 0;        // shard files examined
  uint64_t tensors = 0;       // tensors examined
  uint64_t experts = 0;       // experts examined
  uint64_t bytesHashed = 0;   // container + source bytes hashed
  double seconds = 0;
  // Where the time went (--json "phases"; issue 22): wall seconds of the
  // passes, and the hash passes' read wait and hashing summed over threads.
  struct Phases {
    double check = 0;        // fast pass: headers, tensors, manifest (per-tensor bookkeeping)
    double readWait = 0;     // hashing threads waiting for blocks (summed)
    double hash = 0;         // SHA-256 + expert checks (summed)
    double hashWall = 0;     // the --full pass, wall
    double sourceWall = 0;   // the --source passes (index, expert hashes, dense compare), wall
  } phases;
  size_t threads = 0;
};

class VerifyReport {
 public:
  void add(Problem p) { problems_.push_back(std::move(p)); }
  void add(ProblemKind kind, std::string shard, std::string tensor, std::string what,
           int layer = -1, int expert = -1);
  void merge(std::vector<Problem> more);

  bool sound() const { return problems_.empty(); }
  // Some file could not be read at all (the run is incomplete: exit 2).
  bool incomplete() const;
  const std::vector<Problem>& problems() const { return problems_; }
  VerifySummary& summary() { return summary_; }
  const VerifySummary& summary() const { return summary_; }

  // Problems sorted for stable output (shard, layer, expert, tensor, text).
  void sort();
  std::string text() const;  // problem lines then "k3-verify: ..." summary line
  std::string json() const;  // {"sound":..., "summary":{...}, "problems":[...]}

 private:
  std::vector<Problem> problems_;
  VerifySummary summary_;
};

}  // namespace k3::verify
