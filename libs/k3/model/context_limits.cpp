#include "k3/model/context_limits.h"

#include <cstdio>

#include "k3/io/error.h"
#include "k3/model/sequence_state.h"

namespace k3::model {

namespace {

constexpr uint64_t kFloat = sizeof(float);
constexpr uint64_t kHeadGroup = 8;  // MlaLayer::kHeadGroup: heads scored together per thread

std::string gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return b;
}

}  // namespace

uint64_t sessionBytesEstimate(const ModelConfig& c, size_t ctxIn, size_t chunkIn, size_t threadsIn) {
  const uint64_t ctx = ctxIn, chunk = chunkIn, threads = threadsIn ? threadsIn : 1;
  const uint64_t D = uint64_t(c.hiddenSize), V = uint64_t(c.vocabSize), H = uint64_t(c.numAttentionHeads);
  const uint64_t qr = uint64_t(c.qLoraRank), kvr = uint64_t(c.kvLoraRank);
  const uint64_t nope = uint64_t(c.qkNopeHeadDim), rope = uint64_t(c.qkRopeHeadDim), vd = uint64_t(c.vHeadDim);
  const uint64_t P = uint64_t(c.kdaProjDim()), hd = uint64_t(c.kdaHeadDim), Hk = uint64_t(c.kdaNumHeads);
  const uint64_t E = uint64_t(c.numExperts), k = uint64_t(c.numExpertsPerToken), lat = uint64_t(c.latentSize);
  const uint64_t ish = uint64_t(c.sharedIntermediate()), Id = uint64_t(c.intermediateSize);
  uint64_t mlaLayers = 0;
  for (int l = 0; l < c.numLayers; ++l) mlaLayers += c.isKdaLayer(l) ? 0 : 1;
  const uint64_t blocks = uint64_t(c.numAttnResBlocks()) + 1;

  // Sized by the context: each MLA layer's latent and rope cache, the
  // per-thread score rows, the token history.
  const uint64_t perPosition = mlaLayers * (kvr + rope) * kFloat + threads * kHeadGroup * kFloat + sizeof(int32_t);
  // Sized by the chunk (one set of layer scratch, shared by the layers).
  const uint64_t mla = D + qr + H * (nope + rope) + (kvr + rope) + 2 * H * vd + 2 * H * kvr;
  const uint64_t kda = 6 * P + hd + Hk + threads * (3 * hd + 1);
  const uint64_t moe = 2 * E + 2 * k + 2 * lat + 3 * k * lat + 2 * ish + D;
  const uint64_t dense = 2 * Id;
  const uint64_t forward = 3 * D + blocks * D;
  const uint64_t logits = V;  // teacher-forced logits of one chunk
  const uint64_t perChunkToken = (mla + kda + moe + dense + forward + logits) * kFloat;
  return ctx * perPosition + chunk * perChunkToken;
}

void checkContextLimits(const ModelConfig& c, const ContextRequest& r, uint64_t memoryBytes) {
  const char* ctxName = r.ctxGiven ? "--ctx" : "the context (the ids given)";
  if (r.ctx == 0) fail(ErrorKind::Usage, ctxName, " 0: must be at least 1");
  if (r.chunk == 0) fail(ErrorKind::Usage, "--chunk 0: must be at least 1");
  if (c.maxPositionEmbeddings > 0) {
    const uint64_t most = static_cast<uint64_t>(c.maxPositionEmbeddings);
    if (r.ctx > most)
      fail(ErrorKind::Usage, ctxName, " ", r.ctx, ": more than the model's max_position_embeddings ", most);
    if (r.chunk > most)
      fail(ErrorKind::Usage, "--chunk ", r.chunk, ": more than the model's max_position_embeddings ", most);
  }
  // A chunk longer than the context is never filled: the Session is given min().
  const size_t chunk = r.chunk < r.ctx ? r.chunk : r.ctx;
  // Every sequence beyond the first holds its own state at ctx (and a row of logits).
  const uint64_t perSequence = SequenceState::bytesFor(c, r.ctx) + uint64_t(c.vocabSize) * kFloat;
  const size_t parallel = r.parallel ? r.parallel : 1;
  const uint64_t sessions = sessionBytesEstimate(c, r.ctx, chunk, r.threads) + (parallel - 1) * perSequence;
  const uint64_t need = sessions + r.stateCacheBytes;
  if (need > memoryBytes && r.stateCacheBytes > 0 && sessions <= memoryBytes)
    fail(ErrorKind::Usage, "--state-cache-gb: up to ", gib(r.stateCacheBytes),
         " of checkpoints in RAM (with --state-cache-dir, the tier and as much again queued for it) beside ",
         gib(sessions), " for ", parallel, " sequences at ", ctxName, " ", r.ctx, " would need ", gib(need),
         ", more than this machine's ", gib(memoryBytes));
  if (need > memoryBytes && parallel > 1)
    fail(ErrorKind::Usage, "--parallel ", parallel, " x ", ctxName, " ", r.ctx, ": ", parallel, " sequences of ",
         gib(perSequence), " each (with --batch-tokens ", chunk, ") would need ", gib(need),
         " of memory, more than this machine's ", gib(memoryBytes));
  if (need > memoryBytes)
    fail(ErrorKind::Usage, ctxName, " ", r.ctx, " with --chunk ", chunk, ": the session would need ", gib(need),
         " of memory, more than this machine's ", gib(memoryBytes));
}

}  // namespace k3::model
