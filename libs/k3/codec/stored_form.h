// The stored-form rule (spec §5.2–5.5, §5.9), written once: for a dense
// tensor of class Bits / Mla / Head with source shape [O, I] and its class's
// bit width (--bits / --mla-bits / --head-bits: 4, 8 or 16), what the
// container holds — the BF16 kept as is, int8 per row (U8 [O, I] + F32 .qs
// [O]) or int4 in groups of 64 (U8 [O, I/2] + F32 .qs [O, I/64]; I % 64 != 0
// falls back to int8). k3-repack plans by it (convert/shard_plan), k3-verify
// checks by it (verify/container_checker, verify/source_dense) and k3-run
// reads by it (model/model_weights, through weight_view.h). Pure functions:
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "k3/format/dtype.h"
#include "k3/format/safetensors_header.h"
#include "k3/format/tensor_inventory.h"

namespace k3::codec {

enum class StoredForm { KeepFloat, Int8Rows, Int4G64 };

// "kept float", "int8 per-row", "int4-g64": as problem reports name them.
const char* storedFormName(StoredForm f);

// The bit width a class is stored at: `bits` for Bits, `mlaBits` for Mla,
// `headBits` for Head, 16 (kept) for every other class.
int classBits(TensorClass cls, int bits, int mlaBits, int headBits);

// bits >= 16: kept; bits <= 4 and I % 64 == 0: int4-g64; else int8 per row.
StoredForm storedFormFor(int bits, uint64_t inputs);

// The name of a quantized tensor's scale sidecar: "<name>.qs".
inline constexpr std::string_view kScaleSidecarSuffix = ".qs";
std::string scaleSidecarName(std::string_view tensor);

struct StoredTensor {
  Dtype dtype = Dtype::U8;
  std::vector<uint64_t> shape;
};

// What a quantized form of [O, I] stores (form != KeepFloat): the packed
// tensor (U8) and its F32 sidecar, which directly follows it (spec §5.5).
StoredTensor storedData(StoredForm form, uint64_t O, uint64_t I);
StoredTensor storedScales(StoredForm form, uint64_t O, uint64_t I);

// True when `t` + sidecar `qs` are exactly `form`'s tensors for [O, I]
// (dtype U8 or I8 and F32 are the caller's to check; shapes and sizes here).
bool isStoredAs(StoredForm form, const TensorInfo& t, const TensorInfo& qs, uint64_t O, uint64_t I);

}  // namespace k3::codec
