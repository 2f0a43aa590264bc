#include "k3/verify/container_checker.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <unistd.h>

#include "k3/codec/stored_form.h"
#include "k3/format/expert_manifest.h"
#include "k3/format/safetensors_file.h"
#include "k3/format/spread_layout.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/file_io.h"
#include "k3/io/input_file.h"
#include "k3/io/json_text.h"
#include "k3/io/sha256.h"

namespace fs = std::filesystem;

namespace k3::verify {
namespace {

bool endsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// The exact header bytes spec §3.3 prescribes for these tensors: length
// prefix, compact ASCII JSON in layout order with keys dtype, shape,
// data_offsets, no __metadata__, space padding to make 8 + N a multiple of 8.
std::string canonicalHeader(const SafetensorsHeader& h) {
  std::string json = "{";
  bool first = true;
  for (size_t i : h.offsetOrder()) {
    const TensorInfo& t = h.tensors[i];
    if (!first) json += ",";
    first = false;
    appendJsonString(json, t.name);
    json += cat(":{\"dtype\":\"", dtypeName(t.dtype), "\",\"shape\":[");
    for (size_t d = 0; d < t.shape.size(); ++d) json += cat(d ? "," : "", t.shape[d]);
    json += cat("],\"data_offsets\":[", t.begin, ",", t.end, "]}");
  }
  json += "}";
  while ((8 + json.size()) % 8 != 0) json += ' ';
  std::string out(8, '\0');
  for (int b = 0; b < 8; ++b) out[static_cast<size_t>(b)] = static_cast<char>((json.size() >> (8 * b)) & 0xff);
  return out + json;
}

// The first `n` bytes of a shard (empty if unreadable).
std::string readPrefix(const std::string& path, uint64_t n) {
  try {
    const InputFile f = openInputFile(path, kShardInput);
    std::string buf(n, '\0');
    buf.resize(preadFull(f.fd.fd, buf.data(), n, 0, path));
    return buf;
  } catch (const Error&) {
    return {};
  }
}

// Files k3-repack writes besides the shards and the copied files.
bool isContainerBookkeeping(const std::string& name) {
  return name == "model.safetensors.index.json" || name == ExpertManifest::kFileName ||
         name == ExpertManifest::kPartsDir || name == ExpertManifest::kLockName ||
         name == "tokenizer.json";  // k3-tokgen's output, written next to the tiktoken.model it reads
}

size_t firstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

struct Located {
  size_t shard = 0;
  size_t pos = 0;  // index into the shard's header.tensors
};

class Checker {
 public:
  Checker(const std::string& dir, const std::vector<std::string>& spread, VerifyReport& report)
      : report_(report), spread_(spread) {
    facts_.dir = dir;
  }

  ContainerFacts run() {
    openShards();
    buildNameTable();
    checkIndex();
    loadConfigAndManifest();
    if (facts_.config) {
      checkDenseTensors();
      checkExperts();
      checkUnexpected();
    }
    checkShardOrder();
    if (facts_.manifest) checkManifestShards();
    if (facts_.manifest) checkOtherFiles();
    return std::move(facts_);
  }

 private:
  void problem(ProblemKind k, const std::string& shard, const std::string& tensor,
               const std::string& what, int layer = -1, int expert = -1) {
    report_.add(k, shard, tensor, what, layer, expert);
  }

  // The directories shards live in: DST, and for a spread container
  // (k3-repack --spread) its other roots, each with its location prefix. A
  // missing, wrong or swapped root stops the run here, naming it.
  std::vector<ShardRoot> shardDirs() const {
    ExpertManifest m;
    try {
      m = ExpertManifest::load((fs::path(facts_.dir) / ExpertManifest::kFileName).string());
    } catch (const Error&) {
      if (!spread_.empty()) throw;  // --spread needs the manifest's roots
      return {{facts_.dir, "."}};   // reported by loadConfigAndManifest
    }
    return shardRoots(facts_.dir, m, spread_);
  }

  void openShards() {
    std::error_code ec;
    if (!fs::is_directory(facts_.dir, ec))
      fail(ErrorKind::Io, facts_.dir, ": not a readable directory");
    std::vector<std::pair<std::string, std::string>> names;  // (location, path)
    const std::vector<ShardRoot> dirs = shardDirs();
    for (const ShardRoot& r : dirs) facts_.rootDirs.push_back(r.dir);
    for (size_t k = 0; k < dirs.size(); ++k) {
      const auto& [dir, root] = dirs[k];
      for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        const std::string where = spreadLocation(root, name);
        if (endsWith(name, ".safetensors")) names.emplace_back(where, entry.path().string());
        else if (name.find(".tmp") != std::string::npos)
          problem(ProblemKind::Unexpected, where, "", "leftover temporary file (interrupted run?)");
        else if (k == 0 && !isContainerBookkeeping(name))
          otherFiles_.push_back(name);  // judged once the manifest's file list is known
        else if (k > 0 && name != SpreadMarker::kFileName)
          problem(ProblemKind::Unexpected, "", "",
                  cat("file ", where, " is in spread root ", dir, " but is not a shard of the container"));
      }
      if (ec) failErrno(ec.value(), dir, "cannot list directory");
    }
    std::sort(names.begin(), names.end());
    if (names.empty()) problem(ProblemKind::Missing, "", "", "no *.safetensors shard in " + facts_.dir);
    for (const auto& [name, path] : names) {
      ShardFacts s;
      s.file = name;
      s.path = path;
      std::error_code sec;
      s.regular = fs::is_regular_file(s.path, sec);
      s.size = s.regular ? fs::file_size(s.path, sec) : 0;
      if (sec) s.size = 0;
      try {
        auto f = SafetensorsFile::open(s.path, SafetensorsFile::Access::HeaderOnly);
        s.header = f.header();
        s.dataOffset = f.dataOffset();
        s.headerOk = true;
        if (s.dataOffset % 8 != 0)
          problem(ProblemKind::Header, name, "",
                  cat("data section starts at byte ", s.dataOffset, ", not 8-byte aligned (spec 3.3)"));
        // Any other byte change in a header shows here, even a harmless-looking one.
        const std::string want = canonicalHeader(s.header);
        const std::string have = readPrefix(s.path, s.dataOffset);
        if (have != want)
          problem(ProblemKind::Header, name, "",
                  cat("header bytes are not the canonical spec 3.3 form (first difference at byte ",
                      firstDifference(have, want), ")"));
      } catch (const Error& e) {
        problem(e.kind() == ErrorKind::Io ? ProblemKind::Unreadable : ProblemKind::Header, name, "",
                e.what());
      }
      facts_.shards.push_back(std::move(s));
    }
  }

  void buildNameTable() {
    for (size_t si = 0; si < facts_.shards.size(); ++si) {
      const auto& tensors = facts_.shards[si].header.tensors;
      for (size_t ti = 0; ti < tensors.size(); ++ti) {
        auto [it, fresh] = where_.emplace(tensors[ti].name, Located{si, ti});
        if (!fresh)
          problem(ProblemKind::Index, facts_.shards[si].file, tensors[ti].name,
                  "duplicate tensor name, also in shard " + facts_.shards[it->second.shard].file);
      }
    }
  }

  const TensorInfo* tensor(const std::string& name, Located* loc = nullptr) const {
    auto it = where_.find(name);
    if (it == where_.end()) return nullptr;
    if (loc) *loc = it->second;
    return &facts_.shards[it->second.shard].header.tensors[it->second.pos];
  }
  const std::string& shardOf(const std::string& name) const {
    static const std::string none;
    auto it = where_.find(name);
    return it == where_.end() ? none : facts_.shards[it->second.shard].file;
  }

  void checkIndex() {
    const std::string path = (fs::path(facts_.dir) / "model.safetensors.index.json").string();
    IndexFacts index;
    try {
      index = loadIndexFacts(path);
    } catch (const Error& e) {
      problem(ProblemKind::Index, "", "", e.what());
      return;
    }
    std::set<std::string> files, broken;
    for (const auto& s : facts_.shards) {
      files.insert(s.file);
      if (!s.headerOk) broken.insert(s.file);
    }
    std::unordered_set<std::string> listed;
    uint64_t total = 0;
    for (const auto& [name, file] : index.weightMap) {
      listed.insert(name);
      if (!files.count(file)) {
        problem(ProblemKind::Index, file, name, "index names a shard that does not exist");
        continue;
      }
      if (broken.count(file)) {  // its header problem is reported once; don't cascade
        unreadable_.insert(name);
        continue;
      }
      Located loc;
      const TensorInfo* t = tensor(name, &loc);
      if (!t) problem(ProblemKind::Index, file, name, "index entry has no tensor in any shard header");
      else if (facts_.shards[loc.shard].file != file)
        problem(ProblemKind::Index, file, name,
                "index says shard " + file + " but the tensor is in " + facts_.shards[loc.shard].file);
    }
    for (const auto& s : facts_.shards) {
      for (const auto& t : s.header.tensors) {
        total += t.nbytes();
        if (!listed.count(t.name)) problem(ProblemKind::Index, s.file, t.name, "tensor has no index entry");
      }
    }
    if (index.totalSize && *index.totalSize != total && broken.empty())
      problem(ProblemKind::Index, "", "",
              cat("index metadata.total_size is ", *index.totalSize, " but the shards hold ", total,
                  " tensor bytes"));
  }

  void loadConfigAndManifest() {
    const std::string cfgPath = (fs::path(facts_.dir) / "config.json").string();
    std::string cfgSha256;
    try {
      const std::string text = readInputFile(cfgPath, kConfigInput);
      cfgSha256 = Sha256::hexOf(text.data(), text.size());
      facts_.config = ModelConfig::parse(text, cfgPath);
    } catch (const Error& e) {
      problem(ProblemKind::Config, "", "", e.what());
    }
    const std::string manPath = (fs::path(facts_.dir) / "k3-manifest.json").string();
    try {
      facts_.manifest = loadManifestFacts(manPath);
    } catch (const Error& e) {
      problem(ProblemKind::Manifest, "", "", e.what());
    }
    if (facts_.manifest && !cfgSha256.empty() && facts_.manifest->configSha256 != cfgSha256)
      problem(ProblemKind::Manifest, "", "",
              cat("config.json has SHA-256 ", cfgSha256, ", the manifest's source.config_sha256 is ",
                  facts_.manifest->configSha256, " (config changed after conversion)"));
    if (!facts_.config) return;
    if (facts_.manifest) {
      const ManifestFacts& m = *facts_.manifest;
      if (m.numLayers != facts_.config->numLayers)
        problem(ProblemKind::Manifest, "", "",
                cat("manifest source.num_hidden_layers is ", m.numLayers, ", config.json says ",
                    facts_.config->numLayers));
      if (m.numExperts != facts_.config->numExperts)
        problem(ProblemKind::Manifest, "", "",
                cat("manifest source.num_experts is ", m.numExperts, ", config.json says ",
                    facts_.config->numExperts));
      for (int b : {m.bits, m.mlaBits, m.headBits})
        if (b != 4 && b != 8 && b != 16)
          problem(ProblemKind::Manifest, "", "", cat("manifest settings carry bit width ", b, " (k3-repack writes 4, 8 or 16)"));
    }
    facts_.prefix = languageModelPrefix([&](const std::string& name) { return tensor(name) != nullptr; });
    if (facts_.manifest && facts_.manifest->prefix != facts_.prefix)
      problem(ProblemKind::Manifest, "", "",
              cat("manifest source.prefix is '", facts_.manifest->prefix, "' but the tensors carry '",
                  facts_.prefix, "'"));
  }

  int bitsFor(TensorClass cls) const {
    const ManifestFacts& m = *facts_.manifest;
    return codec::classBits(cls, m.bits, m.mlaBits, m.headBits);
  }

  void expectShape(const std::string& file, const TensorInfo& t, const std::vector<uint64_t>& want,
                   const char* what) {
    if (t.shape != want)
      problem(ProblemKind::Shape, file, t.name,
              cat(what, " shape is ", shapeText(t.shape), ", expected ", shapeText(want)));
  }

  void checkDenseTensors() {
    for (const auto& e : expectedDenseTensors(*facts_.config, facts_.prefix)) {
      Located loc;
      const TensorInfo* t = tensor(e.name, &loc);
      if (!t && unreadable_.count(e.name)) continue;
      if (!t) {
        problem(ProblemKind::Missing, "", e.name,
                cat("missing (", tensorClassName(e.cls), " tensor implied by config.json)"));
        continue;
      }
      claimed_.insert(e.name);
      const std::string& file = facts_.shards[loc.shard].file;
      const bool quantClass = e.cls == TensorClass::Bits || e.cls == TensorClass::Mla ||
                              e.cls == TensorClass::Head;
      if (!quantClass) {
        if (!isFloatDtype(t->dtype))
          problem(ProblemKind::Dtype, file, e.name,
                  cat("dtype ", dtypeName(t->dtype), ", expected a float dtype (pass-through tensor)"));
        if (endsWith(e.name, ".A_log")) {  // zero-padded per spec 2.4: 1-D, at least H entries
          if (t->shape.size() != 1 || t->shape[0] < e.shape[0])
            problem(ProblemKind::Shape, file, e.name,
                    cat("shape is ", shapeText(t->shape), ", expected 1-D with >= ", e.shape[0], " entries"));
        } else {
          expectShape(file, *t, e.shape, "");
        }
        continue;
      }
      checkQuantized(e, *t, loc);
    }
  }

  // Spec §5.5 / §5.9: U8 [O, I] + F32 .qs [O] (int8) or U8 [O, I/2] + F32 .qs
  // [O, I/64] (int4-g64); the sidecar directly follows in header and data.
  void checkQuantized(const ExpectedTensor& e, const TensorInfo& t, Located loc) {
    const ShardFacts& shard = facts_.shards[loc.shard];
    const uint64_t O = e.shape[0], I = e.shape.size() > 1 ? e.shape[1] : 1;
    const std::string qsName = codec::scaleSidecarName(e.name);
    Located qloc;
    const TensorInfo* qs = tensor(qsName, &qloc);
    if (qs) claimed_.insert(qsName);
    std::optional<codec::StoredForm> form;
    if (facts_.manifest) form = codec::storedFormFor(bitsFor(e.cls), I);
    const bool isFloat = isFloatDtype(t.dtype);
    if (!form) {  // no manifest settings: accept any valid stored form
      form = isFloat ? codec::StoredForm::KeepFloat
                     : (t.shape.size() == 2 && t.shape[1] * 2 == I ? codec::StoredForm::Int4G64
                                                                    : codec::StoredForm::Int8Rows);
    }
    const char* formName = codec::storedFormName(*form);
    if (*form == codec::StoredForm::KeepFloat) {
      if (!isFloat)
        problem(ProblemKind::Dtype, shard.file, e.name,
                cat("dtype ", dtypeName(t.dtype), ", expected BF16 (", tensorClassName(e.cls),
                    " class kept at 16 bits)"));
      expectShape(shard.file, t, e.shape, "");
      if (qs) problem(ProblemKind::Sidecar, shardOf(qsName), qsName, "unexpected .qs sidecar for a float tensor");
      return;
    }
    if (t.dtype != Dtype::U8)
      problem(ProblemKind::Dtype, shard.file, e.name,
              cat("dtype ", dtypeName(t.dtype), ", expected U8 (", formName, ", ",
                  tensorClassName(e.cls), " bits ", facts_.manifest ? bitsFor(e.cls) : 0, ")"));
    expectShape(shard.file, t, codec::storedData(*form, O, I).shape, formName);
    if (!qs) {
      problem(ProblemKind::Sidecar, shard.file, qsName, "missing .qs sidecar of a quantized tensor");
      return;
    }
    if (qs->dtype != Dtype::F32)
      problem(ProblemKind::Sidecar, shardOf(qsName), qsName,
              cat("sidecar dtype ", dtypeName(qs->dtype), ", expected F32"));
    const std::vector<uint64_t> wantQs = codec::storedScales(*form, O, I).shape;
    if (qs->shape != wantQs)
      problem(ProblemKind::Sidecar, shardOf(qsName), qsName,
              cat("sidecar shape is ", shapeText(qs->shape), ", expected ", shapeText(wantQs), " (",
                  formName, ")"));
    if (qloc.shard != loc.shard || qloc.pos != loc.pos + 1 || qs->begin != t.end)
      problem(ProblemKind::Sidecar, shardOf(qsName), qsName,
              "sidecar does not directly follow its tensor in header and data (spec 5.5)");
  }

  void checkExperts() {
    const ModelConfig& cfg = *facts_.config;
    const uint64_t bytes = expertBytes(cfg);
    for (int layer = 0; layer < cfg.numLayers; ++layer) {
      if (!cfg.isMoeLayer(layer)) continue;
      for (int id = 0; id < cfg.numExperts; ++id) {
        ++expectedExperts_;
        const TensorInfo* parts[kExpertParts] = {};
        Located locs[kExpertParts];
        bool complete = true;
        std::vector<std::string> missing;
        for (int p = 0; p < kExpertParts; ++p) {
          const std::string name = expertTensorName(facts_.prefix, layer, id, static_cast<ExpertPart>(p));
          parts[p] = tensor(name, &locs[p]);
          if (!parts[p]) {
            if (!unreadable_.count(name)) missing.push_back(name);
            complete = false;
            continue;
          }
          claimed_.insert(name);
          const std::string& file = facts_.shards[locs[p].shard].file;
          if (parts[p]->dtype != Dtype::U8)
            problem(ProblemKind::Dtype, file, name,
                    cat("dtype ", dtypeName(parts[p]->dtype), ", expected U8 (MXFP4)"), layer, id);
          const auto want = expertPartShape(cfg, static_cast<ExpertPart>(p));
          if (parts[p]->shape != want)
            problem(ProblemKind::Shape, file, name,
                    cat("shape is ", shapeText(parts[p]->shape), ", expected ", shapeText(want)), layer, id);
        }
        if (missing.size() == kExpertParts)
          problem(ProblemKind::Missing, "", "", "expert missing (none of its six tensors exists)", layer, id);
        else
          for (const auto& name : missing) problem(ProblemKind::Missing, "", name, "expert tensor missing", layer, id);
        if (!complete) continue;
        const ShardFacts& shard = facts_.shards[locs[0].shard];
        bool contiguous = true;
        for (int p = 1; p < kExpertParts; ++p)
          if (locs[p].shard != locs[0].shard || parts[p]->begin != parts[p - 1]->end) contiguous = false;
        if (!contiguous) {
          problem(ProblemKind::Layout, shard.file, "",
                  "the six expert tensors are not back-to-back in one shard (w1p w1s w2p w2s w3p w3s)",
                  layer, id);
          continue;
        }
        const uint64_t begin = shard.dataOffset + parts[0]->begin;
        const uint64_t end = shard.dataOffset + parts[kExpertParts - 1]->end;
        if (end - begin != bytes)
          problem(ProblemKind::Size, shard.file, "",
                  cat("expert spans ", end - begin, " bytes, expected ", bytes), layer, id);
        actualExperts_[{layer, id}] = ManifestExpertFact{layer, id, shard.file, begin, end, ""};
      }
    }
    if (facts_.manifest) checkManifestExperts();
  }

  void checkManifestExperts() {
    std::map<std::pair<int, int>, const ManifestExpertFact*> listed;
    for (const auto& m : facts_.manifest->experts) {
      if (!listed.emplace(std::make_pair(m.layer, m.id), &m).second)
        problem(ProblemKind::Manifest, m.file, "", "expert listed twice in the manifest", m.layer, m.id);
      const ModelConfig& cfg = *facts_.config;
      if (m.layer < 0 || m.layer >= cfg.numLayers || !cfg.isMoeLayer(m.layer) || m.id < 0 ||
          m.id >= cfg.numExperts)
        problem(ProblemKind::Manifest, m.file, "", "manifest lists an expert the config does not imply",
                m.layer, m.id);
    }
    const ModelConfig& cfg = *facts_.config;
    for (int layer = 0; layer < cfg.numLayers; ++layer) {
      if (!cfg.isMoeLayer(layer)) continue;
      for (int id = 0; id < cfg.numExperts; ++id) {
        auto it = listed.find({layer, id});
        if (it == listed.end()) {
          problem(ProblemKind::Manifest, "", "", "expert missing from the manifest", layer, id);
          continue;
        }
        auto act = actualExperts_.find({layer, id});
        if (act == actualExperts_.end()) continue;  // already reported
        const ManifestExpertFact& m = *it->second;
        const ManifestExpertFact& a = act->second;
        if (m.file != a.file || m.begin != a.begin || m.end != a.end)
          problem(ProblemKind::Manifest, a.file, "",
                  cat("manifest says ", m.file, " bytes [", m.begin, ", ", m.end, ") but the headers put it at ",
                      a.file, " bytes [", a.begin, ", ", a.end, ")"),
                  layer, id);
      }
    }
  }

  void checkUnexpected() {
    for (const auto& s : facts_.shards)
      for (const auto& t : s.header.tensors)
        if (!claimed_.count(t.name)) {
          const bool vision = classifyTensor(t.name, *facts_.config) == TensorClass::Skip;
          problem(ProblemKind::Unexpected, s.file, t.name,
                  vision ? "vision tensor in the container (must be dropped)"
                         : "tensor not implied by config.json");
        }
  }

  // Spec §5.6: non-expert tensors first, then experts in (id, part) order.
  void checkShardOrder() {
    for (const auto& s : facts_.shards) {
      if (!s.headerOk) continue;
      bool inExperts = false;
      ExpertName prev;
      bool havePrev = false;
      for (size_t i : s.header.offsetOrder()) {
        const TensorInfo& t = s.header.tensors[i];
        ExpertName en;
        if (parseExpertName(t.name, en)) {
          inExperts = true;
          if (havePrev && std::make_tuple(en.layer, en.expert, static_cast<int>(en.part)) <=
                              std::make_tuple(prev.layer, prev.expert, static_cast<int>(prev.part))) {
            problem(ProblemKind::Layout, s.file, t.name, "expert tensors are not in (id, w1p..w3s) order",
                    en.layer, en.expert);
            break;
          }
          prev = en;
          havePrev = true;
        } else if (inExperts) {
          problem(ProblemKind::Layout, s.file, t.name, "non-expert tensor stored after the experts");
          break;
        }
      }
    }
  }

  void checkManifestShards() {
    std::map<std::string, const ManifestShardFact*> listed;
    for (const auto& m : facts_.manifest->shards)
      if (!listed.emplace(m.file, &m).second)
        problem(ProblemKind::Manifest, m.file, "", "shard listed twice in the manifest");
    for (const auto& s : facts_.shards) {
      auto it = listed.find(s.file);
      if (it == listed.end()) {
        problem(ProblemKind::Manifest, s.file, "", "shard file is not in the manifest");
        continue;
      }
      if (s.regular && it->second->size != s.size)
        problem(ProblemKind::Size, s.file, "",
                cat("file is ", s.size, " bytes, manifest says ", it->second->size));
      if (s.headerOk && (it->second->dataOffset != s.dataOffset || it->second->tensors != s.header.tensors.size()))
        problem(ProblemKind::Manifest, s.file, "",
                cat("header has data offset ", s.dataOffset, " and ", s.header.tensors.size(),
                    " tensors, manifest says ", it->second->dataOffset, " and ", it->second->tensors));
      listed.erase(it);
    }
    for (const auto& [file, m] : listed)
      problem(ProblemKind::Missing, file, "", "shard listed in the manifest does not exist");
    for (const auto& f : facts_.manifest->files) {
      uint64_t size = 0;
      try {
        size = openContainedFile(facts_.dir, f.file, kHashedInput).size;  // regular, inside DST
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Missing)
          problem(ProblemKind::Missing, "", "", cat("copied file ", f.file, " listed in the manifest is missing"));
        else
          problem(ProblemKind::Manifest, "", "", cat("copied file ", f.file, ": ", e.what()));
        continue;
      }
      if (size != f.size)
        problem(ProblemKind::Size, "", "", cat("copied file ", f.file, " is ", size, " bytes, manifest says ", f.size));
    }
    if (facts_.config && facts_.manifest->expertBytes != expertBytes(*facts_.config))
      problem(ProblemKind::Manifest, "", "",
              cat("manifest expert_bytes ", facts_.manifest->expertBytes, " but config.json implies ",
                  expertBytes(*facts_.config)));
  }

  // Anything in DST that is neither a shard, bookkeeping, nor a copied file
  // the manifest lists: a container is exactly what k3-repack wrote.
  void checkOtherFiles() {
    std::set<std::string> copied;
    for (const auto& f : facts_.manifest->files) copied.insert(f.file);
    for (const std::string& name : otherFiles_)
      if (!copied.count(name))
        problem(ProblemKind::Unexpected, "", "", cat("file ", name, " is in the container but not in the manifest"));
  }

  VerifyReport& report_;
  const std::vector<std::string> spread_;  // --spread: where the other roots are now
  ContainerFacts facts_;
  std::vector<std::string> otherFiles_;  // directory entries that are not shards
  std::unordered_map<std::string, Located> where_;
  std::unordered_set<std::string> claimed_;
  std::unordered_set<std::string> unreadable_;  // indexed into a shard whose header is broken
  std::map<std::pair<int, int>, ManifestExpertFact> actualExperts_;
  uint64_t expectedExperts_ = 0;

 public:
  uint64_t expectedExperts() const { return expectedExperts_; }
};

}  // namespace

ContainerFacts checkContainer(const std::string& dir, VerifyReport& report, const std::vector<std::string>& spread) {
  Checker checker(dir, spread, report);
  ContainerFacts facts = checker.run();
  uint64_t tensors = 0;
  for (const auto& s : facts.shards) tensors += s.header.tensors.size();
  report.summary().shards = facts.shards.size();
  report.summary().tensors = tensors;
  report.summary().experts = checker.expectedExperts();
  return facts;
}

}  // namespace k3::verify
