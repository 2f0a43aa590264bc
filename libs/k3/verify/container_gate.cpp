#include "k3/verify/container_gate.h"

#include <malloc.h>

#include <filesystem>
#include <optional>

#include "k3/io/error.h"
#include "k3/verify/container_checker.h"

namespace k3::verify {

namespace {

// "file X is in the container but not in the manifest": not what k3-run reads.
bool isStrayFile(const Problem& p) { return p.kind == ProblemKind::Unexpected && p.shard.empty() && p.tensor.empty(); }

ErrorKind errorKindOf(ProblemKind k) {
  switch (k) {
    case ProblemKind::Unreadable: return ErrorKind::Io;
    case ProblemKind::Config: return ErrorKind::Config;
    case ProblemKind::Missing: return ErrorKind::Missing;
    default: return ErrorKind::Format;
  }
}

// The first problem that matters and how many there are.
std::optional<std::pair<Problem, size_t>> firstProblem(const VerifyReport& report) {
  // A missing file explains the problems that follow from it (tensors the
  // index places there, manifest entries): it is the one to name.
  std::optional<std::pair<Problem, size_t>> out;
  bool missingFile = false;
  for (const Problem& p : report.problems()) {
    if (isStrayFile(p)) continue;
    const bool isMissingFile = p.kind == ProblemKind::Missing && !p.shard.empty() && p.tensor.empty() && p.layer < 0;
    if (!out || (isMissingFile && !missingFile)) {
      const size_t seen = out ? out->second : 0;
      out.emplace(p, seen);
      missingFile = isMissingFile;
    }
    ++out->second;
  }
  return out;
}

// What the checks read, in the order ModelWeights maps the shards: by file
// name, or the manifest's order for a spread container.
CheckedContainer checkedContainer(ContainerFacts&& facts) {
  CheckedContainer out;
  out.config = std::move(*facts.config);
  out.rootDirs = std::move(facts.rootDirs);
  auto adopt = [&](ShardFacts& s) {
    out.shards.push_back(
        SafetensorsFile::fromParsed(std::move(s.path), s.size, s.dataOffset - 8, std::move(s.header)));
  };
  if (out.rootDirs.size() > 1) {
    for (const ManifestShardFact& m : facts.manifest->shards)
      for (ShardFacts& s : facts.shards)
        if (s.file == m.file) adopt(s);
  } else {
    for (ShardFacts& s : facts.shards) adopt(s);
  }
  return out;
}

}  // namespace

std::optional<CheckedContainer> checkContainerGate(const std::string& dir, const std::vector<std::string>& spread) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !fs::exists(fs::symlink_status(fs::path(dir) / "k3-manifest.json", ec)))
    return std::nullopt;  // not a container at all: ModelWeights::open says so (and how to convert a snapshot)
  std::optional<std::pair<Problem, size_t>> found;
  std::optional<CheckedContainer> checked;
  {
    VerifyReport report;
    ContainerFacts facts = checkContainer(dir, report, spread);
    found = firstProblem(report);
    if (!found && facts.config && facts.manifest) checked = checkedContainer(std::move(facts));
  }
  // The checks' facts and parsed JSON (the manifest's above all: 25 MB on K3)
  // are freed by now (the config and shard headers are kept for the opener);
  // the heap goes back to the system, or it would stay in the run's resident
  // memory (its large buffers are fresh mappings).
  ::malloc_trim(0);
  if (!found) return checked;
  const auto& [first, count] = *found;
  fail(errorKindOf(first.kind), dir, ": not a sound container: ", first.line(),
       count > 1 ? cat(" (and ", count - 1, count == 2 ? " more problem" : " more problems", "; k3-verify ", dir,
                       " lists them)")
                 : std::string());
}

}  // namespace k3::verify
