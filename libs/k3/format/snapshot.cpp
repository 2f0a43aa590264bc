#include "k3/format/snapshot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "k3/format/durable_file.h"
#include "k3/format/sha256.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"

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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) fail(ErrorKind::Missing, path, ": source shard is missing");
    failErrno(errno, path, "cannot open");
  }
  struct stat st {};
  ::fstat(fd, &st);
  size = static_cast<uint64_t>(st.st_size);
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
  ::close(fd);
  headerSha256 = Sha256::hexOf(bytes.data(), done);
}

Snapshot Snapshot::open(const std::string& dirIn) {
  Snapshot s;
  s.dir_ = dirIn;
  while (s.dir_.size() > 1 && s.dir_.back() == '/') s.dir_.pop_back();
  struct stat st {};
  if (::stat(s.dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    fail(ErrorKind::Missing, s.dir_, ": source snapshot directory does not exist");
  const std::string cfgPath = s.dir_ + "/config.json";
  s.configText_ = readWholeFile(cfgPath);
  s.configSha256_ = Sha256::hexOf(s.configText_.data(), s.configText_.size());
  s.config_ = ModelConfig::parse(s.configText_, cfgPath);
  const std::string idxPath = s.dir_ + "/" + kIndexName;
  const SnapshotIndex index = SnapshotIndex::load(idxPath);
  if (index.weightMap.empty()) fail(ErrorKind::Format, idxPath, ": weight_map is empty");
  s.indexedTensors_ = index.weightMap.size();

  std::unordered_set<int> numbers;
  std::vector<std::string> files = index.shardFiles();
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size(); ++i) {
    SourceShard sh;
    sh.file = files[i];
    sh.path = s.dir_ + "/" + files[i];
    sh.number = parseShardNumber(files[i]);
    if (sh.number == 0) sh.number = static_cast<int>(i) + 1;
    if (!numbers.insert(sh.number).second)
      fail(ErrorKind::Duplicate, idxPath, ": two shards carry the number ", sh.number, " ('",
           files[i], "')");
    if (::stat(sh.path.c_str(), &st) != 0)
      fail(ErrorKind::Missing, sh.path, ": shard listed in ", kIndexName, " is missing");
    sh.st = SafetensorsFile::open(sh.path, SafetensorsFile::Access::HeaderOnly);
    identify(sh.path, sh.size, sh.headerSha256);
    s.shards_.push_back(std::move(sh));
  }
  std::sort(s.shards_.begin(), s.shards_.end(),
            [](const SourceShard& a, const SourceShard& b) { return a.number < b.number; });
  s.crossCheck(index);
  return s;
}

void Snapshot::crossCheck(const SnapshotIndex& index_) {
  const std::string idxPath = dir_ + "/" + kIndexName;
  // string_view keys into the headers and the index: no copies of ~500k names.
  std::unordered_map<std::string_view, std::string_view> mapped;
  mapped.reserve(index_.weightMap.size());
  for (const auto& [name, shard] : index_.weightMap)
    if (!mapped.emplace(name, shard).second)
      fail(ErrorKind::Duplicate, idxPath, ": tensor '", name, "' appears twice in weight_map");
  std::unordered_map<std::string_view, const SourceShard*> where;
  where.reserve(index_.weightMap.size());
  for (SourceShard& sh : shards_) {
    for (const TensorInfo& t : sh.st.tensors()) {
      auto [it, fresh] = where.emplace(t.name, &sh);
      if (!fresh)
        fail(ErrorKind::Duplicate, sh.path, ": tensor '", t.name, "' also appears in ",
             it->second->file);
      auto m = mapped.find(t.name);
      if (m == mapped.end())
        fail(ErrorKind::Missing, idxPath, ": no weight_map entry for tensor '", t.name, "' of ", sh.file);
      if (m->second != sh.file)
        fail(ErrorKind::Format, idxPath, ": weight_map puts tensor '", t.name, "' in ", m->second,
             " but it is in ", sh.file);
      if (classifyTensor(t.name, config_) != TensorClass::Skip) sh.hasText = true;
    }
  }
  for (const auto& [name, shard] : index_.weightMap)
    if (!where.count(name))
      fail(ErrorKind::Missing, dir_, "/", shard, ": tensor '", name, "' listed in ", kIndexName,
           " is not in the shard");

  // Prefix (spec §2.1, peer rule).
  const std::string probe = "model.layers.0.input_layernorm.weight";
  prefix_ = (!where.count(probe) && where.count(std::string(kLanguageModelPrefix) + probe))
                ? std::string(kLanguageModelPrefix)
                : std::string();

  auto info = [&](const std::string& name) -> const TensorInfo* {
    auto it = where.find(name);
    return it == where.end() ? nullptr : it->second->st.find(name);
  };
  auto pathOf = [&](const std::string& name) -> const std::string& {
    return where.find(name)->second->path;
  };
  // Every tensor the config implies, with the implied element count.
  for (const ExpectedTensor& e : expectedDenseTensors(config_, prefix_)) {
    const TensorInfo* t = info(e.name);
    if (!t)
      fail(ErrorKind::Config, dir_, ": config.json implies tensor '", e.name,
           "' but no shard holds it");
    uint64_t want = 1;
    for (uint64_t d : e.shape) want *= d;
    const bool padded = e.name.size() >= 6 && e.name.compare(e.name.size() - 6, 6, ".A_log") == 0;
    if (padded ? t->numel() < want : t->numel() != want)
      fail(ErrorKind::Config, pathOf(e.name), ": tensor '", e.name, "' has ", t->numel(),
           " elements but config.json implies ", want);
  }
  // Every routed expert of every MoE layer, six U8 parts of exact shape.
  for (int layer = 0; layer < config_.numLayers; ++layer) {
    if (!config_.isMoeLayer(layer)) continue;
    for (int e = 0; e < config_.numExperts; ++e) {
      for (int p = 0; p < kExpertParts; ++p) {
        const auto part = static_cast<ExpertPart>(p);
        const std::string name = expertTensorName(prefix_, layer, e, part);
        const TensorInfo* t = info(name);
        if (!t)
          fail(ErrorKind::Missing, dir_, ": expert (layer ", layer, ", id ", e, ") tensor '", name,
               "' is missing");
        if (t->dtype != Dtype::U8 || t->shape != expertPartShape(config_, part))
          fail(ErrorKind::Config, pathOf(name), ": expert tensor '", name,
               "' is not U8 with the shape config.json implies");
      }
    }
  }
  // Nothing beyond what the config describes.
  for (const auto& [name, sh] : where) {
    if (classifyTensor(name, config_) == TensorClass::Skip) continue;
    const int layer = layerOf(name);
    if (layer >= config_.numLayers)
      fail(ErrorKind::Config, sh->path, ": tensor '", name, "' is beyond num_hidden_layers = ",
           config_.numLayers);
    ExpertName en;
    if (parseExpertName(name, en) &&
        (en.expert >= config_.numExperts || !config_.isMoeLayer(en.layer)))
      fail(ErrorKind::Config, sh->path, ": expert tensor '", name,
           "' does not fit config.json (num_experts = ", config_.numExperts, ")");
    if (!prefix_.empty() && name.substr(0, prefix_.size()) != prefix_)
      fail(ErrorKind::Format, sh->path, ": tensor '", name, "' lacks the '", prefix_,
           "' prefix the other text tensors carry");
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
