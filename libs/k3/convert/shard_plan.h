// ShardPlan: what one output shard holds and where each byte comes from
// (spec §5.1–5.6 with `--bits 16` = keep BF16). Built from the validated
// source header alone, so the output header, every output offset and the
// file size are known before any data is read.
// Thread-safety: planning is a pure function of the snapshot's headers; a
// ShardPlan is a value, safe to share read-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "k3/format/safetensors_writer.h"
#include "k3/format/snapshot.h"

namespace k3::convert {

// Effective bit widths per class: 4 -> int4-g64 (int8 if I % 64 != 0),
// 5..15 -> int8 per row, >= 16 -> BF16 kept (pass): codec/stored_form.h.
struct BitSettings {
  int bits = 8;
  int mlaBits = 8;
  int headBits = 8;
  // Spec §5.2 defaults: mla/head = max(bits, 8) unless given (0 = not given).
  static BitSettings resolve(int bits, int mlaBits, int headBits);
};

// One step of the output stream, in output order.
struct PlanStep {
  enum class Kind { Copy, QuantInt8, QuantInt4 };
  Kind kind = Kind::Copy;
  uint64_t srcOffset = 0;  // absolute offset in the source shard
  uint64_t srcBytes = 0;
  uint64_t rows = 0, cols = 0;  // quant steps: BF16 [rows, cols]
  std::string tensor;           // for messages (first tensor of a merged copy)
};

// A dense float tensor copied as is: its bytes are checked for NaN / Inf.
struct FloatSpan {
  uint64_t srcOffset = 0;  // absolute in the source shard
  uint64_t bytes = 0;
  Dtype dtype = Dtype::BF16;
  std::string tensor;
};

struct PlannedExpert {
  int layer = 0;
  int id = 0;
  uint64_t offset = 0;  // absolute in the output shard
  uint64_t length = 0;
  uint64_t partBytes[6] = {};  // w1p w1s w2p w2s w3p w3s
};

struct ShardPlan {
  const SourceShard* source = nullptr;
  std::string outputFile;  // basename
  int root = 0;            // k3-repack --spread: index of the directory it goes to (0 = DST)
  std::vector<TensorSpec> tensors;  // output header order
  std::vector<PlanStep> steps;      // source reads/transforms, in output order
  std::vector<PlannedExpert> experts;  // sorted by (layer, id)
  std::vector<FloatSpan> floats;       // copied dense float tensors, by source offset
  std::string header;   // encoded output header (8 + N bytes)
  uint64_t fileSize = 0;
  uint64_t sourceBytes = 0;   // bytes read from the source
  uint64_t quantizedTensors = 0;
};

ShardPlan planShard(const Snapshot& snap, const SourceShard& shard, const BitSettings& bits);

// k3-repack --spread over `roots` directories: the shard's output as one file
// per root (spread_layout.h): part 0 holds the dense tensors and the first id
// range of each layer's experts, part k the k-th range; a part without
// tensors is left out. roots == 1: exactly planShard's one plan.
std::vector<ShardPlan> planShardParts(const Snapshot& snap, const SourceShard& shard, const BitSettings& bits,
                                      int roots);

}  // namespace k3::convert
