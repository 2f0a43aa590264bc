// ContextLimits: what --ctx and --chunk may be for a model on this machine,
// checked where the options are parsed, before anything is allocated. The
// context is bounded by the model's max_position_embeddings and, with the
// prefill chunk, by a memory estimate of what a Session allocates up front
// (MLA caches, per-chunk scratch, a chunk of logits), against the machine's
// memory: --ctx 40000000 is refused in milliseconds with the bytes it would
// need instead of running into the OOM killer. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3/format/model_config.h"

namespace k3::model {

// Bytes a Session with this context and chunk allocates (within a few per
// cent on tiny and K3: the buffers sized by ctx or chunk, per layer kind;
// the weights are mapped, not counted). `threads` sizes the per-thread
// attention and KDA scratch.
uint64_t sessionBytesEstimate(const ModelConfig& c, size_t ctx, size_t chunk, size_t threads);

struct ContextRequest {
  size_t ctx = 0;
  size_t chunk = 0;     // rows per forward (--chunk, or --serve's --batch-tokens)
  size_t threads = 1;
  bool ctxGiven = true;  // named in errors as --ctx (else "the context")
  size_t parallel = 1;   // sequences held at once, each with its state at ctx (--serve's --parallel)
  // --serve's state checkpoints in RAM at most: the --state-cache-gb tier
  // plus as much again waiting for the disk writer (state_directory.h).
  uint64_t stateCacheBytes = 0;
};

// Throws Usage naming --ctx / --chunk: ctx or chunk 0, more than
// max_position_embeddings (when the config has it), or an estimate above
// `memoryBytes` (the message says how much it would need; with parallel > 1
// it names --parallel × --ctx and one sequence's bytes; with a state cache,
// --state-cache-gb and its share).
void checkContextLimits(const ModelConfig& c, const ContextRequest& r, uint64_t memoryBytes);

}  // namespace k3::model
