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
std::optional<std::pair<Problem, size_t>> firstProblem(const std::string& dir, const std::vector<std::string>& spread) {
  VerifyReport report;
  checkContainer(dir, report, spread);
  std::optional<std::pair<Problem, size_t>> out;
  for (const Problem& p : report.problems()) {
    if (isStrayFile(p)) continue;
    if (!out) out.emplace(p, 0);
    ++out->second;
  }
  return out;
}

}  // namespace

void checkContainerGate(const std::string& dir, const std::vector<std::string>& spread) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || !fs::exists(fs::symlink_status(fs::path(dir) / "k3-manifest.json", ec)))
    return;  // not a container at all: ModelWeights::open says so (and how to convert a snapshot)
  const auto found = firstProblem(dir, spread);
  // The checks' facts and parsed JSON (the manifest's above all: 25 MB on K3)
  // are freed by now; the heap goes back to the system, or it would stay in
  // the run's resident memory (its large buffers are fresh mappings).
  ::malloc_trim(0);
  if (!found) return;
  const auto& [first, count] = *found;
  fail(errorKindOf(first.kind), dir, ": not a sound container: ", first.line(),
       count > 1 ? cat(" (and ", count - 1, count == 2 ? " more problem" : " more problems", "; k3-verify ", dir,
                       " lists them)")
                 : std::string());
}

}  // namespace k3::verify
