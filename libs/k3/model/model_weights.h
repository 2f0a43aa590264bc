// ModelWeights: a read-only view of a k3 container (spec §5.5–5.9). Every
// shard is memory-mapped; every tensor the config implies is resolved once at
// start into a WeightView over the mapping (no copy of any matrix), and every
// shape, dtype and byte count is checked there, so a corrupt or incomplete
// container fails before the first token with one line naming file and tensor.
// Small vectors (norms, biases, conv taps) are converted to f32 copies.
// Thread-safety: immutable after open(); safe to share across threads (every
// Session of a process reads one).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k3/codec/weight_view.h"
#include "k3/format/checked_container.h"
#include "k3/format/model_config.h"
#include "k3/format/safetensors_file.h"
#include "k3/io/output_file.h"

namespace k3::model {

using codec::WeightView;

struct KdaWeights {
  WeightView q, k, v, g, o;      // q/k/v/g: [P, D]; o: [D, P]
  WeightView fa, fb, b;          // decay low rank [d, D], [P, d]; beta [Hk, D]
  std::vector<float> qConv, kConv, vConv;  // [P × K], tap 0 = oldest input
  std::vector<float> dtBias;     // [P]
  std::vector<float> aLog;       // [Hk] (padding beyond Hk dropped)
  std::vector<float> oNorm;      // [d], shared by all heads
};

struct MlaWeights {
  WeightView qa, qb, kva, kvb, o, g;
  std::vector<float> qaNorm, kvaNorm;
};

struct DenseMlpWeights {
  WeightView gate, up, down;
};

// One routed expert: three MXFP4 matrices, contiguous in one shard.
struct ExpertWeights {
  WeightView w1, w2, w3;  // w1/w3: [inter, latent]; w2: [latent, inter]
  uint32_t shard = 0;     // index into ModelWeights::shards()
  uint64_t offset = 0;    // byte range of all six parts inside the shard file
  uint64_t bytes = 0;
};

struct MoeWeights {
  WeightView router;               // [E, D]
  std::vector<float> scoreBias;    // [E], selection only
  WeightView downLatent, upLatent; // [latent, D], [D, latent]
  std::vector<float> expertNorm;   // [latent]
  WeightView sharedGate, sharedUp, sharedDown;
  std::vector<ExpertWeights> experts;  // by id
};

struct LayerWeights {
  bool kda = false;
  bool moe = false;
  std::vector<float> inputNorm, postAttnNorm;
  std::vector<float> attnResScorer, mlpResScorer;  // res_norm ⊙ res_proj (spec §2.3)
  KdaWeights kdaW;
  MlaWeights mlaW;
  DenseMlpWeights denseW;
  MoeWeights moeW;
};

// How the model multiplies by its weights (fixed for the life of the views).
struct WeightOptions {
  // Activation precision: false = f32 (exact w.r.t. the stored weights);
  // true = int8 per 32 values into the integer-dot kernels for every
  // MXFP4 / int4-g64 / int8 matrix whose width is a multiple of 32 (routed
  // experts included): faster, approximate (docs/K3_RUN.md "int8 activations").
  bool int8Activations = false;
};

class ModelWeights {
 public:
  // Opens the container in `dir`. Throws k3::Error (Missing, Format, Config,
  // Unsupported) with one line naming the file and tensor. A Hugging Face
  // snapshot is refused with a message naming the k3-repack command.
  // A container spread over several directories (k3-repack --spread) is
  // followed through its manifest's roots, or `spread` (the other roots'
  // directories, in order) when the set was moved; a missing, wrong or
  // swapped directory or a missing shard fails here with one line.
  // `checked`: the container as k3-run's start gate already read it
  // (verify::checkContainerGate): its config and shard headers are used, not
  // read again; the shards are only mapped.
  static std::unique_ptr<ModelWeights> open(const std::string& dir, const WeightOptions& opts = {},
                                            const std::vector<std::string>& spread = {},
                                            std::optional<CheckedContainer> checked = std::nullopt);

  ModelWeights(const ModelWeights&) = delete;
  ModelWeights& operator=(const ModelWeights&) = delete;

  const ModelConfig& config() const { return cfg_; }
  const WeightOptions& options() const { return opts_; }
  const std::string& dir() const { return dir_; }
  // Identities of the container's files: what an output must never replace.
  std::vector<FileId> inputFiles() const;
  const std::vector<SafetensorsFile>& shards() const { return shards_; }

  const WeightView& embedding() const { return embed_; }  // [V, D]
  const WeightView& head() const { return head_; }        // [V, D]
  const std::vector<float>& finalNorm() const { return finalNorm_; }
  const std::vector<float>& outputResScorer() const { return outResScorer_; }
  const LayerWeights& layer(int i) const { return layers_[static_cast<size_t>(i)]; }

  uint64_t expertBytesTotal() const { return expertBytesTotal_; }
  uint64_t bytesPerExpert() const { return bytesPerExpert_; }
  uint64_t mappedBytesTotal() const;  // all shard files
  // Of those, the bytes mapped with 2 MiB page-cache pages right now. The
  // routed experts stream about twice as fast from them as from 4 KiB pages
  // on Zen 5 (docs/K3_RUN.md, session 19); a page cache filled without the
  // huge-page advice (an older k3-run, cat, cp) keeps small pages until the
  // file's pages are dropped and read again.
  uint64_t hugePageBytesTotal() const;
  // Drops every shard's pages no process maps from the page cache, so they
  // are read again (from disk) in 2 MiB pages: k3-run --recache.
  void dropCachedPages() const;
  // Maps every page of every shard now (MADV_POPULATE_READ), so a run on a
  // warm page cache does not pay one page fault per 4 KiB page as it goes.
  // `withExperts` false leaves the routed experts to be faulted on use.
  void prefault(bool withExperts) const;

 private:
  ModelWeights() = default;
  void readContainer(const std::vector<std::string>& spread);
  friend class WeightResolver;

  ModelConfig cfg_;
  WeightOptions opts_;
  std::string dir_;
  std::vector<std::string> rootDirs_;  // dir_, then a spread container's other roots
  std::vector<SafetensorsFile> shards_;
  WeightView embed_, head_;
  std::vector<float> finalNorm_, outResScorer_;
  std::vector<LayerWeights> layers_;
  uint64_t expertBytesTotal_ = 0;
  uint64_t bytesPerExpert_ = 0;
};

}  // namespace k3::model
