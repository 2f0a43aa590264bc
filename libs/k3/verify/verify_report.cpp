#include "k3/verify/verify_report.h"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <vector>

#include "k3/io/json_text.h"
#include "k3/io/error.h"
#include "k3/io/process_memory.h"

namespace k3::verify {

const char* problemKindName(ProblemKind kind) {
  switch (kind) {
    case ProblemKind::Unreadable: return "unreadable";
    case ProblemKind::Header: return "header";
    case ProblemKind::Size: return "size";
    case ProblemKind::Index: return "index";
    case ProblemKind::Config: return "config";
    case ProblemKind::Missing: return "missing";
    case ProblemKind::Unexpected: return "unexpected";
    case ProblemKind::Dtype: return "dtype";
    case ProblemKind::Shape: return "shape";
    case ProblemKind::Sidecar: return "sidecar";
    case ProblemKind::Layout: return "layout";
    case ProblemKind::Manifest: return "manifest";
    case ProblemKind::Hash: return "hash";
    case ProblemKind::Source: return "source";
  }
  return "unknown";
}

std::string Problem::line() const {
  std::string s = cat("[", problemKindName(kind), "]");
  if (!shard.empty()) s += cat(" shard ", shard, ":");
  if (layer >= 0 && expert >= 0) s += cat(" expert (layer ", layer, ", id ", expert, "):");
  if (!tensor.empty()) s += cat(" tensor '", tensor, "':");
  s += " " + what;
  return s;
}

void VerifyReport::add(ProblemKind kind, std::string shard, std::string tensor, std::string what,
                       int layer, int expert) {
  problems_.push_back(Problem{kind, std::move(shard), std::move(tensor), layer, expert, std::move(what)});
}

void VerifyReport::merge(std::vector<Problem> more) {
  for (auto& p : more) problems_.push_back(std::move(p));
}

bool VerifyReport::incomplete() const {
  return std::any_of(problems_.begin(), problems_.end(),
                     [](const Problem& p) { return p.kind == ProblemKind::Unreadable; });
}

void VerifyReport::sort() {
  std::stable_sort(problems_.begin(), problems_.end(), [](const Problem& a, const Problem& b) {
    return std::tie(a.shard, a.layer, a.expert, a.tensor, a.what) <
           std::tie(b.shard, b.layer, b.expert, b.tensor, b.what);
  });
}

// The mode as the summary line names it: a mode that did not hash the
// container's bytes says so, and how to hash them.
static std::string modeText(const std::string& mode) {
  if (mode == "fast") return "fast: expert bytes not hashed; --full hashes them";
  if (mode == "fast+source") return "fast+source: the container's bytes not hashed; --full hashes them";
  return mode;
}

std::string VerifyReport::text() const {
  std::string out;
  for (const auto& p : problems_) out += p.line() + "\n";
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", summary_.seconds);
  out += cat("k3-verify: ", sound() ? "SOUND" : "PROBLEMS FOUND", " (", modeText(summary_.mode), "): ",
             summary_.shards, " shards, ", summary_.tensors, " tensors, ", summary_.experts,
             " experts, ", summary_.bytesHashed, " bytes hashed, ", problems_.size(),
             " problem(s), ", secs, " s\n");
  return out;
}

std::string VerifyReport::json() const {
  JsonObject summary;
  summary.add("mode", summary_.mode).add("shards", summary_.shards).add("tensors", summary_.tensors);
  summary.add("experts", summary_.experts).add("bytes_hashed", summary_.bytesHashed);
  summary.fixed("seconds", summary_.seconds, 3).add("problems", problems_.size());
  summary.add("threads", summary_.threads).add("peak_rss_bytes", peakRssBytes());
  const VerifySummary::Phases& ph = summary_.phases;
  JsonObject phases;
  phases.add("check_s", ph.check).add("read_wait_s", ph.readWait).add("hash_s", ph.hash);
  phases.add("hash_wall_s", ph.hashWall).add("source_wall_s", ph.sourceWall);
  summary.add("phases", phases);
  std::vector<JsonObject> rows;
  for (const Problem& p : problems_) {
    JsonObject& row = rows.emplace_back();
    row.add("kind", problemKindName(p.kind)).add("shard", p.shard).add("tensor", p.tensor);
    row.add("layer", p.layer).add("expert", p.expert).add("what", p.what).add("line", p.line());
  }
  JsonObject o;
  o.add("sound", sound()).add("incomplete", incomplete()).add("summary", summary).add("problems", rows);
  return o.str() + "\n";
}

}  // namespace k3::verify
