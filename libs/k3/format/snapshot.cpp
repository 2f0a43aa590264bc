#include "k3/format/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/output_file.h"
#include "k3/io/sha256.h"

namespace k3 {
namespace {

// "model-00002-of-000096.safetensors" -> 2; 0 if the name has another form.
int parseShardNumber(const std::string& name) {
  unsigned n = 0, total = 0;
  int used = 0;
  if (std::sscanf(name.c_str(), "model-%5u-of-%u.safetensors%n", &n, &total, &used) == 2 &&
      static_cast<size_t>(used) == name.size() && n > 0)
    return static_cast<int>(n);
  return 0;
}

int layerOf(std::string_view name) {
  // {p}model.layers.{i}.*
  if (name.substr(0, kLanguageModelPrefix.size()) == kLanguageModelPrefix)
    name.remove_prefix(kLanguageModelPrefix.size());
  constexpr std::string_view head = "model.layers.";
  if (name.substr(0, head.size()) != head) return -1;
  name.remove_prefix(head.size());
  int v = 0;
  size_t i = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 9; ++i) v = v * 10 + (name[i] - '0');
  return (i > 0 && i < name.size() && name[i] == '.') ? v : -1;
}

}  // namespace

std::string Snapshot::shardName(int number, int total) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%06d.safetensors", number, total);
  return buf;
}

std::string Snapshot::outputShardName(int number) const { return shardName(number, outputShardTotal()); }

void Snapshot::identify(const std::string& path, uint64_t& size, std::string& headerSha256) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT)
    fail(ErrorKind::Missing, path, ": source shard is missing");
  const InputFile in = openInputFile(path, kShardInput);
  const int fd = in.fd.fd;
  size = in.size;
  unsigned char len[8] = {};
  uint64_t n = 0;
  if (size >= 8 && ::pread(fd, len, 8, 0) == 8)
    for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > size - std::min<uint64_t>(size, 8)) n = 0;  // invalid: hash the length prefix only
  std::string bytes(8 + n, '\0');
  size_t done = 0;
  while (size >= 8 && done < bytes.size()) {
    ssize_t r = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    done += static_cast<size_t>(r);
  }
  headerSha256 = Sha256::hexOf(bytes.data(), done);
}

SafetensorsFile SourceShard::openHeader() const {
  return SafetensorsFile::open(path, SafetensorsFile::Access::HeaderOnly);
}

// A weight_map entry: the name's fingerprint and its shard file's index.
struct Snapshot::IndexedName {
  uint64_t a = 0, b = 0;
  uint32_t shard = 0;
  bool seen = false;
  bool operator<(const IndexedName& o) const { return a != o.a ? a < o.a : b < o.b; }
  bool sameName(const IndexedName& o) const { return a == o.a && b == o.b; }
};

namespace {

Snapshot::IndexedName fingerprint(std::string_view name) {
  Snapshot::IndexedName k;
  std::tie(k.a, k.b) = nameFingerprint(name);
  return k;
}

template <typename Vec>
auto* findName(Vec& index, std::string_view name) {
  const auto key = fingerprint(name);
  auto it = std::lower_bound(index.begin(), index.end(), key);
  return (it != index.end() && it->sameName(key)) ? &*it : nullptr;
}

// The first weight_map name (file order) matching `pred` (error paths only:
// the names themselves are not kept).
template <typename Pred>
std::string firstIndexName(const std::string& idxPath, Pred pred) {
  std::string found;
  SnapshotIndex::scanFile(idxPath, [&](std::string_view name, std::string_view shard) {
    if (found.empty() && pred(name, shard)) found = name;
  });
  return found;
}

}  // namespace

bool Snapshot::isDropped(std::string_view name) const {
  return !dropped_.empty() && std::binary_search(dropped_.begin(), dropped_.end(), nameFingerprint(name));
}

Snapshot Snapshot::open(const std::string& dirIn, const SnapshotOptions& opts) {
  Snapshot s;
  s.opts_ = opts;
  s.dir_ = dirIn;
  while (s.dir_.size() > 1 && s.dir_.back() == '/') s.dir_.pop_back();
  struct stat st {};
  if (::stat(s.dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(ErrorKind::Missing, s.dir_, ": source snapshot directory does not exist");
  const std::string cfgPath = s.dir_ + "/config.json";
  s.configText_ = readInputFile(cfgPath, kConfigInput);
  s.configSha256_ = Sha256::hexOf(s.configText_.data(), s.configText_.size());
  s.config_ = ModelConfig::parse(s.configText_, cfgPath);
  const std::string idxPath = s.dir_ + "/" + kIndexName;

  std::vector<IndexedName> index;
  std::vector<std::string> files;  // shard files, first-appearance order
  std::unordered_map<std::string, uint32_t> fileNumber;
  uint32_t last = 0;  // entries come in runs of one shard: look the name up only when it changes
  SnapshotIndex::scanFile(idxPath, [&](std::string_view name, std::string_view shard) {
    if (files.empty() || files[last] != shard) {
      auto [it, fresh] = fileNumber.emplace(std::string(shard), static_cast<uint32_t>(files.size()));
      if (fresh) files.emplace_back(shard);
      last = it->second;
    }
    IndexedName k = fingerprint(name);
    k.shard = last;
    index.push_back(k);
  });
  if (index.empty()) fail(ErrorKind::Format, idxPath, ": weight_map is empty");
  s.indexedTensors_ = index.size();
  std::sort(index.begin(), index.end());
  for (size_t i = 1; i < index.size(); ++i)
    if (index[i].sameName(index[i - 1])) {
      const IndexedName dup = index[i];
      fail(ErrorKind::Duplicate, idxPath, ": tensor '",
           firstIndexName(idxPath, [&](std::string_view n, std::string_view) { return fingerprint(n).sameName(dup); }),
           "' appears twice in weight_map");
    }

  std::unordered_set<int> numbers;
  std::vector<std::string> sorted = files;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    SourceShard sh;
    sh.file = sorted[i];
    sh.path = s.dir_ + "/" + sorted[i];
    sh.number = parseShardNumber(sorted[i]);
    if (sh.number == 0) sh.number = static_cast<int>(i) + 1;
    if (!numbers.insert(sh.number).second)
      fail(ErrorKind::Duplicate, idxPath, ": two shards carry the number ", sh.number, " ('",
           sorted[i], "')");
    if (::stat(sh.path.c_str(), &st) != 0)
      fail(ErrorKind::Missing, sh.path, ": shard listed in ", kIndexName, " is missing");
    s.shards_.push_back(std::move(sh));
  }
  std::sort(s.shards_.begin(), s.shards_.end(),
            [](const SourceShard& a, const SourceShard& b) { return a.number < b.number; });
  s.crossCheck(index, files);
  std::sort(s.dropped_.begin(), s.dropped_.end());
  return s;
}

void Snapshot::crossCheck(std::vector<IndexedName>& index, const std::vector<std::string>& indexShards) {
  const std::string idxPath = dir_ + "/" + kIndexName;

  // Prefix (spec §2.1, peer rule), decided from the index alone.
  prefix_ = languageModelPrefix([&](const std::string& name) { return findName(index, name) != nullptr; });

  // What the config implies: dense tensors by name, experts as a bit per part.
  struct Implied {
    const ExpectedTensor* e;
    bool found = false;
  };
  const std::vector<ExpectedTensor> expected = expectedDenseTensors(config_, prefix_);
  std::unordered_map<std::string_view, Implied> implied;
  for (const ExpectedTensor& e : expected) implied.emplace(e.name, Implied{&e});
  const size_t E = static_cast<size_t>(config_.numExperts);
  std::vector<uint8_t> expertParts(static_cast<size_t>(config_.numLayers) * E, 0);  // bit p = part p seen

  // A tensor in a shard other than its index entry's: a duplicate if that
  // entry's own shard also holds it, else a wrong index. Known only at the end.
  struct Misplaced {
    std::string name;
    const SourceShard* shard;
    IndexedName* entry;
  };
  std::vector<Misplaced> misplaced;

  for (SourceShard& sh : shards_) {
    const SafetensorsFile header = sh.openHeader();
    identify(sh.path, sh.size, sh.headerSha256);
    sh.tensors = header.tensors().size();
    for (const TensorInfo& t : header.tensors()) {
      IndexedName* entry = findName(index, t.name);
      if (!entry)
        fail(ErrorKind::Missing, idxPath, ": no weight_map entry for tensor '", t.name, "' of ", sh.file);
      if (indexShards[entry->shard] != sh.file) {
        if (misplaced.empty()) misplaced.push_back({t.name, &sh, entry});
        continue;
      }
      entry->seen = true;
      const TensorClass cls = classifyTensor(t.name, config_);
      if (cls == TensorClass::Skip) continue;
      sh.hasText = true;

      // Nothing beyond what the config describes.
      if (layerOf(t.name) >= config_.numLayers)
        fail(ErrorKind::Config, sh.path, ": tensor '", t.name, "' is beyond num_hidden_layers = ",
             config_.numLayers);
      if (!prefix_.empty() && t.name.compare(0, prefix_.size(), prefix_) != 0)
        fail(ErrorKind::Format, sh.path, ": tensor '", t.name, "' lacks the '", prefix_,
             "' prefix the other text tensors carry");
      ExpertName en;
      if (parseExpertName(t.name, en)) {
        if (en.expert >= config_.numExperts || !config_.isMoeLayer(en.layer))
          fail(ErrorKind::Config, sh.path, ": expert tensor '", t.name,
               "' does not fit config.json (num_experts = ", config_.numExperts, ")");
        if (t.dtype != Dtype::U8 || t.shape != expertPartShape(config_, en.part))
          fail(ErrorKind::Config, sh.path, ": expert tensor '", t.name,
               "' is not U8 with the shape config.json implies");
        expertParts[static_cast<size_t>(en.layer) * E + static_cast<size_t>(en.expert)] |=
            static_cast<uint8_t>(1u << static_cast<int>(en.part));
        continue;
      }
      auto it = implied.find(t.name);
      if (it == implied.end()) {
        if (!opts_.dropUnknown)
          fail(ErrorKind::Config, sh.path, ": tensor '", t.name,
               "' is not implied by config.json (k3-verify would reject the container); "
               "--drop-unknown leaves such tensors out");
        dropped_.push_back(nameFingerprint(t.name));
        continue;
      }
      const ExpectedTensor& e = *it->second.e;
      // What k3-verify demands of the container, checked before any byte is written.
      if (!isFloatDtype(t.dtype))
        fail(ErrorKind::Config, sh.path, ": tensor '", e.name, "' has dtype ", dtypeName(t.dtype),
             ", config.json implies a float tensor");
      const bool padded = e.name.size() >= 6 && e.name.compare(e.name.size() - 6, 6, ".A_log") == 0;
      if (padded ? (t.shape.size() != 1 || t.shape[0] < e.shape[0]) : t.shape != e.shape)
        fail(ErrorKind::Config, sh.path, ": tensor '", e.name, "' has shape ", shapeText(t.shape),
             " but config.json implies ", padded ? "1-D, at least " : "", shapeText(e.shape));
      it->second.found = true;
    }
  }

  for (const Misplaced& m : misplaced) {
    const std::string& home = indexShards[m.entry->shard];
    if (m.entry->seen)
      fail(ErrorKind::Duplicate, m.shard->path, ": tensor '", m.name, "' also appears in ", home);
    fail(ErrorKind::Format, idxPath, ": weight_map puts tensor '", m.name, "' in ", home,
         " but it is in ", m.shard->file);
  }
  for (const IndexedName& entry : index)
    if (!entry.seen) {
      const std::string name = firstIndexName(idxPath, [&](std::string_view n, std::string_view) {
        const IndexedName* e = findName(index, n);
        return e && !e->seen;
      });
      fail(ErrorKind::Missing, dir_, "/", indexShards[entry.shard], ": tensor '", name, "' listed in ",
           kIndexName, " is not in the shard");
    }
  for (const ExpectedTensor& e : expected)
    if (!implied.at(e.name).found)
      fail(ErrorKind::Config, dir_, ": config.json implies tensor '", e.name, "' but no shard holds it");
  for (int layer = 0; layer < config_.numLayers; ++layer) {
    if (!config_.isMoeLayer(layer)) continue;
    for (int id = 0; id < config_.numExperts; ++id) {
      const uint8_t have = expertParts[static_cast<size_t>(layer) * E + static_cast<size_t>(id)];
      for (int p = 0; p < kExpertParts; ++p)
        if (!(have & (1u << p)))
          fail(ErrorKind::Missing, dir_, ": expert (layer ", layer, ", id ", id, ") tensor '",
               expertTensorName(prefix_, layer, id, static_cast<ExpertPart>(p)), "' is missing");
    }
  }
}

std::vector<const SourceShard*> Snapshot::textShards() const {
  std::vector<const SourceShard*> out;
  for (const SourceShard& sh : shards_)
    if (sh.hasText) out.push_back(&sh);
  return out;
}

const SourceShard* Snapshot::shardByNumber(int number) const {
  for (const SourceShard& sh : shards_)
    if (sh.number == number) return &sh;
  return nullptr;
}

}  // namespace k3
