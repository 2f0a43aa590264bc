#include "k3/model/model_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>
#include <unordered_map>

#include "k3/codec/bf16.h"
#include "k3/codec/stored_form.h"
#include "k3/format/expert_manifest.h"
#include "k3/format/spread_layout.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"
#include "k3/io/input_file.h"
#include "k3/io/mapped_file.h"
#include "k3/io/page_cache.h"

namespace k3::model {

namespace fs = std::filesystem;

// Finds tensors by name across the shards and turns them into checked views.
class WeightResolver {
 public:
  WeightResolver(ModelWeights& m, std::string prefix) : m_(m), prefix_(std::move(prefix)) {
    for (size_t s = 0; s < m_.shards_.size(); ++s)
      for (const TensorInfo& t : m_.shards_[s].tensors()) {
        if (!byName_.emplace(t.name, Loc{static_cast<uint32_t>(s), &t}).second)
          fail(ErrorKind::Duplicate, m_.shards_[s].path(), ": tensor '", t.name,
               "' also appears in an earlier shard");
      }
  }

  struct Loc {
    uint32_t shard;
    const TensorInfo* info;
  };

  const Loc* find(const std::string& name) const {
    auto it = byName_.find(name);
    return it == byName_.end() ? nullptr : &it->second;
  }

  const Loc& require(const std::string& rel) const {
    const std::string name = prefix_ + rel;
    const Loc* l = find(name);
    if (!l) fail(ErrorKind::Missing, m_.dir_, ": tensor '", name, "' is missing from the container");
    return *l;
  }

  const std::string& path(const Loc& l) const { return m_.shards_[l.shard].path(); }
  const uint8_t* bytes(const Loc& l) const { return m_.shards_[l.shard].data(*l.info).data(); }

  // A matrix the model multiplies by, expected as [O, I] (spec §5.9), in
  // any stored form codec reads (a quantized one finds its .qs sidecar here).
  WeightView matrix(const std::string& rel, size_t O, size_t I) const {
    const Loc& l = require(rel);
    const TensorInfo& t = *l.info;
    const bool quantized = t.dtype == Dtype::U8 || t.dtype == Dtype::I8;
    const Loc* qs = quantized ? find(codec::scaleSidecarName(t.name)) : nullptr;
    static const std::string none;
    WeightView w = codec::storedMatrixView(t, bytes(l), path(l), qs ? qs->info : nullptr,
                                           qs ? bytes(*qs) : nullptr, qs ? path(*qs) : none, O, I);
    if (quantized) w.int8Activations = m_.opts_.int8Activations;  // linear() checks the width
    return w;
  }

  // A small float tensor copied to f32. `n` elements must be present; with
  // `atLeast`, more are allowed and dropped (A_log is zero-padded in K3).
  std::vector<float> vec(const std::string& rel, size_t n, bool atLeast = false) const {
    const Loc& l = require(rel);
    const TensorInfo& t = *l.info;
    const uint64_t have = t.numel();
    if (atLeast ? have < n : have != n)
      fail(ErrorKind::Format, path(l), ": tensor '", t.name, "' has shape ", compactShapeText(t.shape),
           " (", have, " elements), expected ", atLeast ? "at least " : "", n, " elements");
    std::vector<float> out(n);
    const uint8_t* p = bytes(l);
    switch (t.dtype) {
      case Dtype::F32: std::copy_n(reinterpret_cast<const float*>(p), n, out.data()); break;
      case Dtype::BF16: codec::bf16ToF32(reinterpret_cast<const uint16_t*>(p), out.data(), n); break;
      case Dtype::F16: codec::f16ToF32(reinterpret_cast<const uint16_t*>(p), out.data(), n); break;
      default:
        fail(ErrorKind::Unsupported, path(l), ": tensor '", t.name, "' has dtype ",
             dtypeName(t.dtype), ", expected BF16, F16 or F32");
    }
    return out;
  }

  // norm ⊙ proj, the AttnRes scorer vector.
  std::vector<float> scorer(const std::string& norm, const std::string& proj, size_t D) const {
    std::vector<float> a = vec(norm, D), b = vec(proj, D);
    for (size_t i = 0; i < D; ++i) a[i] *= b[i];
    return a;
  }

  ExpertWeights expert(int layer, int e) const {
    const ModelConfig& c = m_.cfg_;
    const size_t inter = static_cast<size_t>(c.moeIntermediateSize);
    const size_t lat = static_cast<size_t>(c.latentSize);
    const Loc* part[kExpertParts];
    for (int p = 0; p < kExpertParts; ++p) {
      const auto kind = static_cast<ExpertPart>(p);
      const std::string name = expertTensorName(prefix_, layer, e, kind);
      part[p] = find(name);
      if (!part[p]) fail(ErrorKind::Missing, m_.dir_, ": expert tensor '", name, "' is missing");
      const std::vector<uint64_t> shape = expertPartShape(c, kind);
      const TensorInfo& t = *part[p]->info;
      if (t.dtype != Dtype::U8 || t.nbytes() != shape[0] * shape[1])
        fail(ErrorKind::Format, path(*part[p]), ": expert tensor '", name, "' is ",
             dtypeName(t.dtype), " with ", t.nbytes(), " bytes, expected U8 with ",
             shape[0] * shape[1], " bytes ", compactShapeText(shape));
    }
    auto mx = [&](int packed, size_t O, size_t I) {
      WeightView w = codec::mxfp4View(O, I, bytes(*part[packed]), bytes(*part[packed + 1]));
      w.int8Activations = m_.opts_.int8Activations;  // ExpertResidency's slot views copy it
      return w;
    };
    ExpertWeights x;
    x.w1 = mx(0, inter, lat);
    x.w2 = mx(2, lat, inter);
    x.w3 = mx(4, inter, lat);
    // The byte span the six parts cover, for residency advice (parts of one
    // expert normally sit back to back; a span over several shards is not).
    x.shard = part[0]->shard;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (const Loc* p : part) {
      if (p->shard != x.shard) {
        x.bytes = 0;
        return x;
      }
      lo = std::min(lo, p->info->begin);
      hi = std::max(hi, p->info->end);
    }
    x.offset = m_.shards_[x.shard].dataOffset() + lo;
    x.bytes = hi - lo;
    return x;
  }

 private:
  ModelWeights& m_;
  std::string prefix_;
  std::unordered_map<std::string_view, Loc> byName_;
};

namespace {

std::vector<std::string> shardPaths(const std::string& dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") paths.push_back(e.path().string());
  if (ec) fail(ErrorKind::Io, dir, ": cannot list the directory: ", ec.message());
  std::sort(paths.begin(), paths.end());
  return paths;
}

void refuseIfNotContainer(const std::string& dir) {
  if (!fs::is_directory(dir)) fail(ErrorKind::Missing, dir, ": no such container directory");
  if (fs::exists(fs::path(dir) / "k3-manifest.json")) return;
  const bool looksHf = fs::exists(fs::path(dir) / "config.json");
  fail(ErrorKind::Usage, dir, ": not a k3 container (no k3-manifest.json)",
       looksHf ? "; it looks like a Hugging Face snapshot — convert it first: k3-repack " : "",
       looksHf ? dir : "", looksHf ? " <container-dir>" : "");
}

// The shard basenames (plain) or locations (spread: "<root>/<file>") the index names.
std::set<std::string> indexedShards(const std::string& dir) {
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::set<std::string> named;
  if (!fs::exists(index)) return named;
  const std::string text = readInputFile(index.string(), kIndexInput);
  // Shard names are the only *.safetensors strings in the index.
  for (size_t pos = 0; (pos = text.find(".safetensors\"", pos)) != std::string::npos; ++pos) {
    const size_t q = text.rfind('"', pos);
    named.insert(text.substr(q + 1, pos + 12 - q - 1));
  }
  return named;
}

bool namesOtherRoots(const std::set<std::string>& named) {
  for (const auto& n : named)
    if (n.find('/') != std::string::npos) return true;
  return false;
}

// Every shard the index names must be there (a missing shard is named, rather
// than reported later as a missing tensor).
void checkIndexedShards(const std::string& dir, const std::set<std::string>& named,
                        const std::set<std::string>& present) {
  for (const auto& base : named)
    if (!present.count(base))
      fail(ErrorKind::Missing, (fs::path(dir) / "model.safetensors.index.json").string(), ": shard '", base,
           "' named by the index is missing");
}

// A spread container: every shard the manifest lists, in its root; the roots
// are checked (directory, marker) by shardRoots.
std::vector<std::string> spreadShardPaths(const std::string& dir, const std::vector<std::string>& spread,
                                          std::vector<std::string>& rootDirs, std::set<std::string>& locations) {
  const std::string manifest = (fs::path(dir) / ExpertManifest::kFileName).string();
  const ExpertManifest m = ExpertManifest::load(manifest);
  if (!m.spread() && spread.empty())  // the index names shards elsewhere, the manifest does not
    fail(ErrorKind::Format, dir, "/model.safetensors.index.json names shards outside the container, but ", manifest,
         " is not a spread container's (format_version ", m.formatVersion, ")");
  const std::vector<ShardRoot> roots = shardRoots(dir, m, spread);  // Usage when --spread names a plain one
  rootDirs.clear();
  for (const ShardRoot& r : roots) rootDirs.push_back(r.dir);
  std::vector<std::string> paths;
  for (const ManifestShard& s : m.shards) {
    const std::string path = shardPath(roots, s);
    if (!fs::exists(path))
      fail(ErrorKind::Missing, path, ": shard of ", dir, " (spread root ", s.root, ") is missing");
    paths.push_back(path);
    locations.insert(m.location(s));
  }
  return paths;
}

}  // namespace

void ModelWeights::prefault(bool withExperts) const {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14
#endif
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (const auto& s : shards_) {
    const MappedFile& m = s.mapping();
    if (!m.data() || m.size() == 0) continue;
    // Without experts: populate up to the first expert byte (experts are
    // stored after every other tensor in a k3 container shard).
    size_t end = m.size();
    if (!withExperts)
      for (const TensorInfo& t : s.tensors()) {
        ExpertName en;
        if (parseExpertName(t.name, en)) end = std::min<size_t>(end, s.dataOffset() + t.begin);
      }
    if (end == 0) continue;
    auto* p = const_cast<uint8_t*>(m.data());
    if (::madvise(p, end, MADV_POPULATE_READ) != 0) {
      volatile uint8_t sink = 0;  // older kernels: touch one byte per page
      for (size_t o = 0; o < end; o += page) sink = sink + p[o];
    }
  }
}

uint64_t ModelWeights::mappedBytesTotal() const {
  uint64_t n = 0;
  for (const auto& s : shards_) n += s.fileSize();
  return n;
}

uint64_t ModelWeights::hugePageBytesTotal() const {
  std::vector<const MappedFile*> maps;
  for (const auto& s : shards_) maps.push_back(&s.mapping());
  return MappedFile::hugePageBytes(maps);
}

void ModelWeights::dropCachedPages() const {
  for (const auto& s : shards_) dropFromPageCache(s.path());
}

std::vector<FileId> ModelWeights::inputFiles() const {
  std::vector<FileId> ids;
  for (const std::string& d : rootDirs_) {
    std::vector<FileId> more = regularFileIdsIn(d);
    ids.insert(ids.end(), more.begin(), more.end());
  }
  return ids;
}

// Lists, checks against the index and opens the shards, and reads the config.
void ModelWeights::readContainer(const std::vector<std::string>& spread) {
  const std::string& dir = dir_;
  cfg_ = ModelConfig::load((fs::path(dir) / "config.json").string());
  const std::set<std::string> named = indexedShards(dir);
  std::vector<std::string> paths;
  std::set<std::string> present;
  rootDirs_ = {dir};
  if (!spread.empty() || namesOtherRoots(named)) {
    paths = spreadShardPaths(dir, spread, rootDirs_, present);
  } else {
    paths = shardPaths(dir);
    for (const auto& p : paths) present.insert(fs::path(p).filename().string());
  }
  if (paths.empty()) fail(ErrorKind::Missing, dir, ": no *.safetensors shards in the container");
  checkIndexedShards(dir, named, present);
  shards_.reserve(paths.size());  // no reallocation: the resolver keeps pointers
  for (const auto& p : paths) shards_.push_back(SafetensorsFile::open(p));
}

std::unique_ptr<ModelWeights> ModelWeights::open(const std::string& dir, const WeightOptions& opts,
                                                 const std::vector<std::string>& spread,
                                                 std::optional<CheckedContainer> checked) {
  refuseIfNotContainer(dir);
  std::unique_ptr<ModelWeights> m(new ModelWeights());
  m->dir_ = dir;
  m->opts_ = opts;
  if (checked) {  // read by the start gate: only the mappings are new
    m->cfg_ = std::move(checked->config);
    m->rootDirs_ = std::move(checked->rootDirs);
    m->shards_ = std::move(checked->shards);
    if (m->shards_.empty()) fail(ErrorKind::Missing, dir, ": no *.safetensors shards in the container");
    for (SafetensorsFile& f : m->shards_) f.map();
  } else {
    m->readContainer(spread);
  }
  const ModelConfig& c = m->cfg_;

  // PEER prefix rule (spec §2.1).
  std::string prefix;
  {
    WeightResolver probe(*m, "");
    prefix = languageModelPrefix([&](const std::string& name) { return probe.find(name) != nullptr; });
  }
  WeightResolver r(*m, prefix);

  const size_t D = static_cast<size_t>(c.hiddenSize), V = static_cast<size_t>(c.vocabSize);
  m->embed_ = r.matrix("model.embed_tokens.weight", V, D);
  m->head_ = r.matrix("lm_head.weight", V, D);
  m->finalNorm_ = r.vec("model.norm.weight", D);
  m->outResScorer_ = r.scorer("model.output_attn_res_norm.weight", "model.output_attn_res_proj.weight", D);

  const size_t P = static_cast<size_t>(c.kdaProjDim()), hd = static_cast<size_t>(c.kdaHeadDim);
  const size_t Hk = static_cast<size_t>(c.kdaNumHeads), K = static_cast<size_t>(c.kdaConvKernel);
  const size_t H = static_cast<size_t>(c.numAttentionHeads), qr = static_cast<size_t>(c.qLoraRank);
  const size_t kvr = static_cast<size_t>(c.kvLoraRank), nope = static_cast<size_t>(c.qkNopeHeadDim);
  const size_t rope = static_cast<size_t>(c.qkRopeHeadDim), vd = static_cast<size_t>(c.vHeadDim);
  const size_t E = static_cast<size_t>(c.numExperts), lat = static_cast<size_t>(c.latentSize);
  const size_t Ish = static_cast<size_t>(c.sharedIntermediate()), Id = static_cast<size_t>(c.intermediateSize);

  m->bytesPerExpert_ = expertBytes(c);
  m->layers_.resize(static_cast<size_t>(c.numLayers));
  for (int i = 0; i < c.numLayers; ++i) {
    LayerWeights& L = m->layers_[static_cast<size_t>(i)];
    const std::string l = cat("model.layers.", i, ".");
    L.kda = c.isKdaLayer(i);
    L.moe = c.isMoeLayer(i);
    L.inputNorm = r.vec(l + "input_layernorm.weight", D);
    L.postAttnNorm = r.vec(l + "post_attention_layernorm.weight", D);
    L.attnResScorer = r.scorer(l + "self_attention_res_norm.weight", l + "self_attention_res_proj.weight", D);
    L.mlpResScorer = r.scorer(l + "mlp_res_norm.weight", l + "mlp_res_proj.weight", D);
    const std::string a = l + "self_attn.";
    if (L.kda) {
      KdaWeights& k = L.kdaW;
      k.q = r.matrix(a + "q_proj.weight", P, D);
      k.k = r.matrix(a + "k_proj.weight", P, D);
      k.v = r.matrix(a + "v_proj.weight", P, D);
      k.g = r.matrix(a + "g_proj.weight", P, D);
      k.o = r.matrix(a + "o_proj.weight", D, P);
      k.fa = r.matrix(a + "f_a_proj.weight", hd, D);
      k.fb = r.matrix(a + "f_b_proj.weight", P, hd);
      k.b = r.matrix(a + "b_proj.weight", Hk, D);
      k.qConv = r.vec(a + "q_conv1d.weight", P * K);
      k.kConv = r.vec(a + "k_conv1d.weight", P * K);
      k.vConv = r.vec(a + "v_conv1d.weight", P * K);
      k.dtBias = r.vec(a + "dt_bias", P);
      k.aLog = r.vec(a + "A_log", Hk, /*atLeast=*/true);
      k.oNorm = r.vec(a + "o_norm.weight", hd);
    } else {
      MlaWeights& q = L.mlaW;
      q.qa = r.matrix(a + "q_a_proj.weight", qr, D);
      q.qaNorm = r.vec(a + "q_a_layernorm.weight", qr);
      q.qb = r.matrix(a + "q_b_proj.weight", H * (nope + rope), qr);
      q.kva = r.matrix(a + "kv_a_proj_with_mqa.weight", kvr + rope, D);
      q.kvaNorm = r.vec(a + "kv_a_layernorm.weight", kvr);
      q.kvb = r.matrix(a + "kv_b_proj.weight", H * (nope + vd), kvr);
      q.o = r.matrix(a + "o_proj.weight", D, H * vd);
      q.g = r.matrix(a + "g_proj.weight", H * vd, D);
    }
    if (!L.moe) {
      L.denseW.gate = r.matrix(l + "mlp.gate_proj.weight", Id, D);
      L.denseW.up = r.matrix(l + "mlp.up_proj.weight", Id, D);
      L.denseW.down = r.matrix(l + "mlp.down_proj.weight", D, Id);
    } else {
      MoeWeights& e = L.moeW;
      const std::string b = l + "block_sparse_moe.";
      e.router = r.matrix(b + "gate.weight", E, D);
      e.scoreBias = r.vec(b + "gate.e_score_correction_bias", E);
      e.downLatent = r.matrix(b + "routed_expert_down_proj.weight", lat, D);
      e.upLatent = r.matrix(b + "routed_expert_up_proj.weight", D, lat);
      e.expertNorm = r.vec(b + "routed_expert_norm.weight", lat);
      e.sharedGate = r.matrix(b + "shared_experts.gate_proj.weight", Ish, D);
      e.sharedUp = r.matrix(b + "shared_experts.up_proj.weight", Ish, D);
      e.sharedDown = r.matrix(b + "shared_experts.down_proj.weight", D, Ish);
      e.experts.reserve(E);
      for (size_t x = 0; x < E; ++x) e.experts.push_back(r.expert(i, static_cast<int>(x)));
      m->expertBytesTotal_ += E * m->bytesPerExpert_;
    }
  }
  return m;
}

}  // namespace k3::model
