#include "k3/convert/repacker.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include "k3/convert/dst_lock.h"
#include "k3/format/expert_manifest.h"
#include "k3/format/snapshot.h"
#include "k3/format/spread_layout.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/io/output_file.h"
#include "k3/io/phase_time.h"
#include "k3/io/process_memory.h"
#include "k3/io/sha256.h"
#include "k3/io/thread_pool.h"
#include "k3/tok/added_tokens.h"
#include "k3/tok/vocab.h"

#ifndef K3KIT_VERSION
#define K3KIT_VERSION "0.0.0"
#endif

namespace k3::convert {
namespace {

// Extra files copied from the source when present (issue 2: tiktoken.model
// and tokenizer_config.json too, unlike the peer), each with its size cap.
struct ExtraFile {
  const char* name;
  const InputCap& cap;
};
constexpr ExtraFile kExtraFiles[] = {{"config.json", kConfigInput},
                                     {"generation_config.json", kConfigInput},
                                     {"tiktoken.model", kTokenizerModelInput},
                                     {"tokenizer.json", kTokenizerConfigInput},
                                     {"tokenizer_config.json", kTokenizerConfigInput}};

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

uint64_t fileSize(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void makeDir(const std::string& p) {
  if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) failErrno(errno, p, "cannot create directory");
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string partsDir(const std::string& dst) { return dst + "/" + ExpertManifest::kPartsDir; }
std::string fragmentPath(const std::string& dst, const std::string& shard) {
  return partsDir(dst) + "/" + shard + ".json";
}

ExpertManifest runIdentity(const Snapshot& snap, const BitSettings& b, const std::vector<std::string>& roots) {
  ExpertManifest m;
  if (!roots.empty()) {
    m.formatVersion = ExpertManifest::kSpreadFormatVersion;
    m.roots = roots;
  }
  m.toolVersion = K3KIT_VERSION;
  m.settings = {b.bits, b.mlaBits, b.headBits};
  m.configSha256 = snap.configSha256();
  m.prefix = snap.prefix();
  m.numLayers = snap.config().numLayers;
  m.numExperts = snap.config().numExperts;
  m.expertBytes = expertBytes(snap.config());
  return m;
}

// True when the output shard and its fragment are complete and match this run.
// Refuses (SourceChanged / Mismatch) rather than mixing two conversions.
bool shardDone(const ShardPlan& plan, const ExpertManifest& run, const std::string& dst,
               const std::vector<std::string>& rootDirs, ManifestShard* out) {
  const std::string frag = fragmentPath(dst, plan.outputFile);
  const std::string shard = rootDirs[static_cast<size_t>(plan.root)] + "/" + plan.outputFile;
  if (!exists(frag)) return false;
  ExpertManifest m;
  try {
    m = ExpertManifest::load(frag);
  } catch (const Error&) {
    return false;  // unreadable fragment: redo the shard, the rerun rewrites it
  }
  if (m.shards.size() != 1 || m.shards[0].file != plan.outputFile) return false;
  if (m.configSha256 != run.configSha256)
    fail(ErrorKind::SourceChanged, frag, ": ", plan.outputFile,
         " was converted from a different config.json (sha256 ", m.configSha256.substr(0, 12),
         "…); the source changed since — use a fresh DST");
  if (!m.sameRun(run))
    fail(ErrorKind::Mismatch, frag, ": ", plan.outputFile, " was converted with other settings (bits ",
         m.settings.bits, ", mla-bits ", m.settings.mlaBits, ", head-bits ", m.settings.headBits,
         ", tool ", m.toolVersion, ", ",
         m.spread() ? cat("--spread over ", m.roots.size(), " directories") : std::string("no --spread"),
         "); rerun with those settings or use a fresh DST");
  const ManifestShard& s = m.shards[0];
  if (s.root != plan.root) return false;
  const SourceShard& src = *plan.source;
  if (s.source.file != src.file || s.source.size != src.size ||
      s.source.headerSha256 != src.headerSha256)
    fail(ErrorKind::SourceChanged, src.path, ": source shard changed since ", plan.outputFile,
         " was converted (size ", s.source.size, " -> ", src.size, ", header sha256 ",
         s.source.headerSha256.substr(0, 12), "… -> ", src.headerSha256.substr(0, 12),
         "…); refusing to mix sources");
  if (!exists(shard) || fileSize(shard) != plan.fileSize || s.size != plan.fileSize) return false;
  // Cheap content check: the header bytes must be the planned ones.
  std::string head(plan.header.size(), '\0');
  const InputFile f = openInputFile(shard, kShardInput);  // a FIFO under the name is refused, not read
  if (preadFull(f.fd.fd, head.data(), head.size(), 0, shard) != head.size() || head != plan.header)
    return false;
  if (out) *out = s;
  return true;
}

// Where every root's finished shards are: (location relative to DST, path),
// sorted by location. One root: the shards in DST, as always.
std::vector<std::pair<std::string, std::string>> finishedShards(const std::vector<std::string>& rootDirs,
                                                                 const std::vector<std::string>& roots, int total) {
  const std::string suffix = cat("-of-", Snapshot::shardName(1, total).substr(15));
  auto isShardName = [&](const std::string& n) {
    return n.rfind("model-", 0) == 0 && n.size() > suffix.size() &&
           n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  std::vector<std::pair<std::string, std::string>> files;
  for (size_t k = 0; k < rootDirs.size(); ++k)
    for (const std::string& n : listDir(rootDirs[k]))
      if (isShardName(n) || (!roots.empty() && isShardName(spreadPartShard(n))))  // spread: the .partK files too
        files.emplace_back(roots.empty() ? n : spreadLocation(roots[k], n), rootDirs[k] + "/" + n);
  std::sort(files.begin(), files.end());
  return files;
}

// Spec §5.7: rebuild the index from the finished shards (in DST, or in every
// root of a spread container, named by their location relative to DST).
void rebuildIndex(const std::string& dst, int total, const std::vector<std::string>& rootDirs,
                  const std::vector<std::string>& roots) {
  const std::vector<std::pair<std::string, std::string>> files = finishedShards(rootDirs, roots, total);
  if (files.empty()) return;
  // Two passes over the (small) headers rather than a map of every name:
  // total_size leads the text, and K3 has ~500k tensors.
  uint64_t sum = 0;
  std::vector<std::pair<uint64_t, uint64_t>> names;  // fingerprints, for duplicates
  for (const auto& [n, path] : files) {
    SafetensorsFile f = SafetensorsFile::open(path, SafetensorsFile::Access::HeaderOnly);
    for (const TensorInfo& t : f.tensors()) {
      names.push_back(nameFingerprint(t.name));
      sum += t.nbytes();
    }
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    std::unordered_set<std::string> seen;  // error path: find the name
    for (const auto& [n, path] : files) {
      SafetensorsFile f = SafetensorsFile::open(path, SafetensorsFile::Access::HeaderOnly);
      for (const TensorInfo& t : f.tensors())
        if (!seen.insert(t.name).second)
          fail(ErrorKind::Duplicate, path, ": tensor '", t.name,
               "' already appears in an earlier shard; index left unchanged");
    }
  }
  names = {};
  SnapshotIndex::Text text;
  text.begin(sum);
  for (const auto& [n, path] : files) {
    SafetensorsFile f = SafetensorsFile::open(path, SafetensorsFile::Access::HeaderOnly);
    for (const TensorInfo& t : f.tensors()) text.add(t.name, n);
  }
  writeFileAtomic(dst + "/" + Snapshot::kIndexName, text.end());
}

void removeStaleTemps(const std::string& dir) {
  for (const std::string& n : listDir(dir)) {
    const bool tmp = (n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0) ||
                     n.find(".tmp-") != std::string::npos;
    if (tmp) ::unlink((dir + "/" + n).c_str());
  }
}

void finalize(const Snapshot& snap, const BitSettings& bits, const ExpertManifest& run,
              const std::string& dst, const std::vector<std::string>& rootDirs,
              const std::function<void()>& tick) {
  ExpertManifest m = run;
  const int roots = static_cast<int>(rootDirs.size());
  for (const SourceShard* sh : snap.textShards()) {
    for (const ShardPlan& p : planShardParts(snap, *sh, bits, roots)) {  // one shard's plans at a time
      ManifestShard s;
      if (!shardDone(p, run, dst, rootDirs, &s))
        fail(ErrorKind::Missing, rootDirs[static_cast<size_t>(p.root)], "/", p.outputFile, ": shard ", sh->number,
             " is not converted yet; run k3-repack without --finalize (or with --shards ", sh->number,
             ") first");
      m.shards.push_back(std::move(s));
    }
  }
  std::sort(m.shards.begin(), m.shards.end(),
            [](const ManifestShard& a, const ManifestShard& b) { return a.file < b.file; });
  for (const ExtraFile& extra : kExtraFiles) {
    const char* name = extra.name;
    const std::string from = snap.dir() + "/" + name;
    if (!exists(from)) continue;
    const std::string bytes = readInputFile(from, extra.cap);
    writeFileAtomic(dst + "/" + name, bytes);
    tick();
    m.files.push_back({name, bytes.size(), Sha256::hexOf(bytes.data(), bytes.size())});
  }
  std::sort(m.files.begin(), m.files.end(),
            [](const ManifestFile& a, const ManifestFile& b) { return a.file < b.file; });
  rebuildIndex(dst, snap.outputShardTotal(), rootDirs, run.roots);
  tick();
  for (const std::string& dir : rootDirs) removeStaleTemps(dir);
  removeStaleTemps(partsDir(dst));
  m.save(dst + "/" + ExpertManifest::kFileName);  // last: its presence means complete
}

// The tokenizer files are copied into the container as they are, so they are
// checked as k3-tokgen and k3-run will read them: a tiktoken.model with a
// repeated rank or token, or a broken tokenizer_config.json, is refused now.
void validateTokenizerFiles(const Snapshot& snap) {
  const std::string model = snap.dir() + "/tiktoken.model";
  const std::string config = snap.dir() + "/tokenizer_config.json";
  if (!exists(model)) return;
  const tok::Vocab vocab = tok::Vocab::parse(readInputFile(model, kTokenizerModelInput), model);
  if (exists(config))
    (void)tok::AddedTokens::fromConfigText(readInputFile(config, kTokenizerConfigInput), vocab.size(), config);
}

// The roots a run writes to: --spread's directories after DST, and each
// one's path as the manifest records it (relative to DST). Without --spread:
// DST alone, and nothing recorded.
struct SpreadRoots {
  std::vector<std::string> dirs, recorded;
  int count() const { return static_cast<int>(dirs.size()); }
  // Where a planned shard is relative to DST (its name in the index and the summary).
  std::string location(const ShardPlan& p) const {
    return recorded.empty() ? p.outputFile : spreadLocation(recorded[static_cast<size_t>(p.root)], p.outputFile);
  }
};

SpreadRoots spreadRoots(const RepackOptions& opt) {
  SpreadRoots r;
  r.dirs.push_back(opt.dst);
  if (opt.spread.empty()) return r;
  r.recorded.push_back(".");
  for (const std::string& dir : opt.spread) {
    if (realPath(dir) == realPath(opt.src)) fail(ErrorKind::Usage, dir, ": a --spread directory must differ from SRC");
    std::string rel = relativeRootPath(opt.dst, dir);
    if (std::find(r.recorded.begin(), r.recorded.end(), rel) != r.recorded.end())
      fail(ErrorKind::Usage, dir, ": --spread names this directory twice");
    r.recorded.push_back(std::move(rel));
    r.dirs.push_back(dir);
  }
  return r;
}

// The source shards --shards names (every text shard without it; none with
// --finalize, though --shards is still checked).
std::vector<const SourceShard*> selectShards(const Snapshot& snap, const RepackOptions& opt) {
  const std::vector<const SourceShard*> text = snap.textShards();
  if (opt.shards.empty()) return opt.finalizeOnly ? std::vector<const SourceShard*>{} : text;
  std::vector<const SourceShard*> selected;
  for (int n : opt.shards) {
    auto it = std::find_if(text.begin(), text.end(), [&](const SourceShard* sh) { return sh->number == n; });
    if (it == text.end()) {
      const SourceShard* sh = snap.shardByNumber(n);
      fail(ErrorKind::Usage, "--shards: source shard ", n,
           sh ? " holds only vision tensors (dropped)" : " does not exist in the snapshot");
    }
    selected.push_back(*it);
  }
  if (opt.finalizeOnly) selected.clear();
  return selected;
}

// A selected source shard's output parts not yet converted.
struct ShardTodo {
  const SourceShard* shard;
  std::vector<size_t> parts;  // indices into planShardParts' result
  uint64_t sourceBytes = 0;   // of those parts
};

// What is left to do, and every selected part's status in `sum.shards`
// (this also refuses changed sources). Plans are rebuilt on demand (cheap)
// so that only one shard's are held at a time.
std::vector<ShardTodo> planWork(const Snapshot& snap, const RepackOptions& opt, const ExpertManifest& run,
                                const SpreadRoots& roots, RepackSummary& sum) {
  std::vector<ShardTodo> todo;
  const bool dstExists = exists(opt.dst);
  for (const SourceShard* sh : selectShards(snap, opt)) {
    const std::vector<ShardPlan> parts = planShardParts(snap, *sh, sum.bits, roots.count());
    ShardTodo t{sh, {}};
    for (size_t k = 0; k < parts.size(); ++k) {
      const ShardPlan& p = parts[k];
      ShardStatus st{roots.location(p), sh->file, p.fileSize, p.experts.size(), p.quantizedTensors};
      st.tensors = p.tensors.size();
      const bool done = dstExists && shardDone(p, run, opt.dst, roots.dirs, nullptr);
      st.state = done ? ShardStatus::State::Skipped : ShardStatus::State::Planned;
      if (!done) {
        t.parts.push_back(k);
        t.sourceBytes += p.sourceBytes;
      }
      sum.shards.push_back(st);
    }
    if (!t.parts.empty()) todo.push_back(std::move(t));
  }
  return todo;
}

// Binds every root but DST to this container (its marker) before a shard goes there.
void bindRoots(const std::vector<std::string>& rootDirs, const ExpertManifest& run) {
  for (size_t k = 1; k < rootDirs.size(); ++k) {
    makeDir(rootDirs[k]);
    const std::string marker = rootDirs[k] + "/" + SpreadMarker::kFileName;
    const SpreadMarker want = SpreadMarker::forRoot(run, static_cast<int>(k));
    if (exists(marker)) {
      const SpreadMarker have = SpreadMarker::parse(readInputFile(marker, kConfigInput), marker);
      if (have != want)
        fail(ErrorKind::Mismatch, marker, ": ", rootDirs[k], " already holds root ", have.root, " of ", have.roots,
             " of another container or --spread order (config sha256 ", have.configSha256.substr(0, 12),
             "…, bits ", have.settings.bits, "), not root ", k, " of ", rootDirs.size(),
             " of this one; give each container its own --spread directories, in the same order on reruns");
    } else {
      writeFileAtomic(marker, want.toJson());
    }
  }
}

// The human log line and the crash tests' event hook, both optional.
void logLine(const RepackOptions& opt, const std::string& s) {
  if (opt.log) opt.log(s);
}
void tickEvent(const RepackOptions& opt) {
  if (opt.converter.tick) opt.converter.tick();
}

// Converts one selected shard's parts still to do with `conv`, publishing
// each part and then its fragment. `mu` guards `sum`.
void convertShard(const Snapshot& snap, const RepackOptions& opt, const ExpertManifest& run,
                  const SpreadRoots& roots, const ShardTodo& t, ShardConverter& conv, ProgressMeter& progress,
                  PhaseTime& planTime, PhaseTime& manifestTime, std::mutex& mu, RepackSummary& sum) {
  std::optional<PhaseScope> replanning(&planTime);
  std::vector<ShardPlan> parts = planShardParts(snap, *t.shard, sum.bits, roots.count());
  replanning.reset();
  for (size_t part : t.parts) {
    const ShardPlan p = std::move(parts[part]);
    progress.setLabel(p.outputFile);
    ManifestShard ms = conv.convert(p, roots.dirs[static_cast<size_t>(p.root)], progress);
    ms.root = p.root;
    tickEvent(opt);  // shard published, fragment not yet
    std::optional<PhaseScope> saving(&manifestTime);
    ExpertManifest frag = run;
    frag.shards.push_back(std::move(ms));
    frag.save(fragmentPath(opt.dst, p.outputFile));
    saving.reset();
    tickEvent(opt);
    const uint64_t edges = conv.lastStats().scaleEdgeBytes;
    if (edges)
      logLine(opt, cat("k3-repack: warning: ", p.outputFile, ": ", edges,
              " expert scale bytes are 0 or 255 (engines decode these differently, spec 4)"));
    const std::lock_guard<std::mutex> lk(mu);
    sum.bytesRead += p.sourceBytes;
    sum.bytesWritten += p.fileSize;
    sum.scaleEdgeBytes += edges;
    for (ShardStatus& st : sum.shards)
      if (st.output == roots.location(p)) st.state = ShardStatus::State::Converted;
  }
}

// Converts every shard still to do, opt.jobs shards at a time, each job with
// its own converter (source reader, writer pipeline, hash thread): a shard's
// file digest is one sequential stream, so shards in parallel are what puts
// every core on hashing. Shards are taken in file order (a killed run has
// its first shards done). The first error stops the other jobs at their next read and is thrown.
void convertAll(const Snapshot& snap, const RepackOptions& opt, const ExpertManifest& run, const SpreadRoots& roots,
                const std::vector<ShardTodo>& todo, ProgressMeter& progress, ConvertPhases& phases,
                PhaseTime& planTime, PhaseTime& manifestTime, RepackSummary& sum) {
  const size_t jobs = std::clamp<size_t>(opt.jobs, 1, todo.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::exception_ptr error;
  ThreadPool pool(jobs);
  pool.run([&](size_t, size_t) {
    try {
      ConverterOptions co = opt.converter;
      co.phases = &phases;
      co.threads = std::max<size_t>(1, (co.threads ? co.threads : std::thread::hardware_concurrency()) / jobs);
      co.stop = &stop;
      ShardConverter conv(co);
      for (size_t i; !stop && (i = next++) < todo.size();)
        convertShard(snap, opt, run, roots, todo[i], conv, progress, planTime, manifestTime, mu, sum);
    } catch (...) {
      const std::lock_guard<std::mutex> lk(mu);
      if (!error) error = std::current_exception();
      stop = true;
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace

std::vector<int> parseShardList(const std::string& list) {
  std::set<int> out;
  size_t i = 0;
  auto number = [&](void) -> int {
    size_t start = i;
    long v = 0;
    while (i < list.size() && list[i] >= '0' && list[i] <= '9' && v < 1000000) v = v * 10 + (list[i++] - '0');
    if (i == start || v <= 0 || v >= 1000000)
      fail(ErrorKind::Usage, "--shards '", list, "': expected numbers like 1,3,5-9");
    return static_cast<int>(v);
  };
  while (i < list.size()) {
    int a = number(), b = a;
    if (i < list.size() && list[i] == '-') {
      ++i;
      b = number();
    }
    if (b < a) fail(ErrorKind::Usage, "--shards '", list, "': range ", a, "-", b, " is reversed");
    for (int k = a; k <= b; ++k)
      if (!out.insert(k).second) fail(ErrorKind::Usage, "--shards '", list, "': shard ", k, " listed twice");
    if (i < list.size()) {
      if (list[i] != ',') fail(ErrorKind::Usage, "--shards '", list, "': unexpected '", list[i], "'");
      if (++i == list.size()) fail(ErrorKind::Usage, "--shards '", list, "': trailing comma");
    }
  }
  if (out.empty()) fail(ErrorKind::Usage, "--shards is empty");
  return {out.begin(), out.end()};
}

// DST inside SRC: a later run would read the container as part of its source.
static void refuseDstInsideSrc(const std::string& src, const std::string& dst) {
  std::error_code ec;
  namespace fs = std::filesystem;
  const fs::path s = fs::weakly_canonical(src, ec);
  if (ec) return;  // SRC unreadable: Snapshot::open says so
  const fs::path d = fs::weakly_canonical(dst, ec);
  if (ec) return;
  auto [si, di] = std::mismatch(s.begin(), s.end(), d.begin(), d.end());
  if (si == s.end() && di != d.end())
    fail(ErrorKind::Usage, dst, ": DST is inside SRC ", src,
         " (a later run would read the container as source); put it outside the snapshot");
}

RepackSummary repack(const RepackOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  RepackSummary sum;
  sum.bits = BitSettings::resolve(opt.bits, opt.mlaBits, opt.headBits);
  if (opt.src.empty() || opt.dst.empty()) fail(ErrorKind::Usage, "SRC and DST are required");
  if (exists(opt.dst) && realPath(opt.src) == realPath(opt.dst))
    fail(ErrorKind::Usage, opt.dst, ": DST must differ from SRC");
  refuseDstInsideSrc(opt.src, opt.dst);
  if (exists(opt.src + "/" + ExpertManifest::kFileName))
    fail(ErrorKind::Usage, opt.src, ": a k3kit container already (it has ", ExpertManifest::kFileName,
         "), not a Hugging Face snapshot: k3-verify and k3-run read it as it is");

  SnapshotOptions so;
  so.dropUnknown = opt.dropUnknown;
  PhaseTime openTime, planTime, manifestTime;
  std::optional<PhaseScope> opening(&openTime);
  const Snapshot snap = Snapshot::open(opt.src, so);
  validateTokenizerFiles(snap);
  opening.reset();
  if (snap.droppedTensors())
    logLine(opt, cat("k3-repack: --drop-unknown: leaving out ", snap.droppedTensors(), " tensors config.json does not imply"));
  const SpreadRoots roots = spreadRoots(opt);
  const ExpertManifest run = runIdentity(snap, sum.bits, roots.recorded);
  sum.textShards = static_cast<int>(snap.textShards().size());
  std::optional<PhaseScope> planning(&planTime);
  const std::vector<ShardTodo> todo = planWork(snap, opt, run, roots, sum);
  planning.reset();
  uint64_t total = 0;
  for (const ShardTodo& t : todo) total += t.sourceBytes;
  if (opt.dryRun) {
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
  }

  makeDir(opt.dst);
  // One writer per DST from here on: a second one fails now, naming this PID.
  const DstLock lock(opt.dst);
  if (lock.previousHolder() > 0)
    logLine(opt, cat("k3-repack: taking over the lock of PID ", lock.previousHolder(), " (no longer running)"));
  makeDir(partsDir(opt.dst));
  bindRoots(roots.dirs, run);
  ProgressMeter progress(total, opt.progress);
  ConvertPhases phases;
  if (!todo.empty()) {
    convertAll(snap, opt, run, roots, todo, progress, phases, planTime, manifestTime, sum);
    progress.finish();
  }
  std::optional<PhaseScope> finalizing(&manifestTime);
  if (opt.shards.empty() || opt.finalizeOnly) {
    finalize(snap, sum.bits, run, opt.dst, roots.dirs, [&] { tickEvent(opt); });
    sum.finalized = true;
    logLine(opt, cat("k3-repack: container complete: ", opt.dst, "/", ExpertManifest::kFileName));
  } else {
    rebuildIndex(opt.dst, snap.outputShardTotal(), roots.dirs, roots.recorded);
  }
  finalizing.reset();
  RepackPhases& ph = sum.phases;
  ph.open = openTime.seconds();
  ph.plan = planTime.seconds();
  ph.manifest = manifestTime.seconds();
  ph.readWait = phases.read.wait.seconds();
  ph.read = phases.read.io.seconds();
  ph.reads = phases.readRequests;
  ph.directShards = phases.directShards;
  ph.floatScan = phases.floatScan.seconds();
  ph.quantize = phases.quantize.seconds();
  ph.quantizeWall = phases.quantizeWall.seconds();
  ph.writeWait = phases.writer.freeWait.seconds();
  ph.hash = phases.writer.observe.seconds() + phases.writer.hash.seconds();
  ph.write = phases.writer.write.seconds();
  ph.drain = phases.writer.drain.seconds();
  ph.sync = phases.writer.sync.seconds();
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

std::string RepackSummary::textLine(const RepackOptions& opt) const {
  uint64_t converted = 0, skipped = 0, tensors = 0;
  for (const ShardStatus& s : shards) {
    converted += s.state == ShardStatus::State::Converted;
    skipped += s.state == ShardStatus::State::Skipped;
    tensors += s.tensors;
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  std::string line = cat("k3-repack: ", opt.dst, ": ", shards.size(), " shards (", converted, " converted, ", skipped,
                         " already done), ", tensors, " tensors, ", bytesWritten, " bytes written, ", secs, " s");
  if (!finalized) line += "; not finalized yet (k3-repack SRC DST --finalize once every shard is done)";
  return line;
}

std::string RepackSummary::toJson(const RepackOptions& opt) const {
  using Spacing = JsonObject::Spacing;
  int converted = 0, skipped = 0, planned = 0;
  std::vector<JsonObject> rows;
  for (const ShardStatus& s : shards) {
    converted += s.state == ShardStatus::State::Converted;
    skipped += s.state == ShardStatus::State::Skipped;
    planned += s.state == ShardStatus::State::Planned;
    const char* state = s.state == ShardStatus::State::Converted ? "converted"
                        : s.state == ShardStatus::State::Skipped ? "skipped"
                                                                 : "planned";
    JsonObject& row = rows.emplace_back(Spacing::Python);
    row.add("file", s.output).add("source", s.source).add("size", s.size).add("experts", s.experts);
    row.add("quantized", s.quantized).add("state", state);
  }
  JsonObject o(Spacing::Python);
  o.add("ok", true).add("src", opt.src).add("dst", opt.dst);
  o.add("bits", bits.bits).add("mla_bits", bits.mlaBits).add("head_bits", bits.headBits);
  o.add("dry_run", opt.dryRun).add("text_shards", textShards);
  o.add("converted", converted).add("skipped", skipped).add("planned", planned).add("finalized", finalized);
  o.add("bytes_read", bytesRead).add("bytes_written", bytesWritten).add("expert_scale_edge_bytes", scaleEdgeBytes);
  o.add("seconds", seconds).add("gb_per_s", seconds > 0 ? static_cast<double>(bytesRead) / 1e9 / seconds : 0.0);
  o.add("peak_rss_bytes", peakRssBytes()).add("threads", opt.converter.threads).add("jobs", opt.jobs);
  const RepackPhases& p = phases;
  JsonObject ph(Spacing::Python);
  ph.add("open_s", p.open).add("plan_s", p.plan).add("read_wait_s", p.readWait).add("read_s", p.read);
  ph.add("float_scan_s", p.floatScan).add("quantize_s", p.quantize).add("quantize_wall_s", p.quantizeWall);
  ph.add("write_wait_s", p.writeWait).add("hash_s", p.hash).add("write_s", p.write).add("drain_s", p.drain);
  ph.add("sync_s", p.sync).add("manifest_s", p.manifest).add("reads", p.reads).add("direct_shards", p.directShards);
  o.add("phases", ph).add("shards", rows);
  return o.str();
}

}  // namespace k3::convert
