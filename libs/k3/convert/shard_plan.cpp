#include "k3/convert/shard_plan.h"

#include <algorithm>
#include <tuple>

#include "k3/codec/stored_form.h"
#include "k3/format/spread_layout.h"
#include "k3/format/tensor_inventory.h"
#include "k3/io/error.h"

namespace k3::convert {

BitSettings BitSettings::resolve(int bits, int mlaBits, int headBits) {
  auto check = [](int v, const char* flag) {
    if (v != 4 && v != 8 && v != 16)
      fail(ErrorKind::Usage, "--", flag, " ", v, ": expected 4, 8 or 16");
  };
  check(bits, "bits");
  BitSettings s;
  s.bits = bits;
  s.mlaBits = mlaBits ? mlaBits : std::max(bits, 8);
  s.headBits = headBits ? headBits : std::max(bits, 8);
  check(s.mlaBits, "mla-bits");
  check(s.headBits, "head-bits");
  return s;
}

namespace {

// Appends tensor t as a copy step (merged with the previous copy when the
// source bytes are back to back: one read).
void addCopy(ShardPlan& plan, const TensorInfo& t, uint64_t base) {
  plan.tensors.push_back({t.name, t.dtype, t.shape});
  const uint64_t off = base + t.begin;
  if (!plan.steps.empty() && plan.steps.back().kind == PlanStep::Kind::Copy &&
      plan.steps.back().srcOffset + plan.steps.back().srcBytes == off) {
    plan.steps.back().srcBytes += t.nbytes();
  } else {
    plan.steps.push_back({PlanStep::Kind::Copy, off, t.nbytes(), 0, 0, t.name});
  }
}

// Header, file offsets and sizes once the tensors are in place.
void layOut(ShardPlan& plan) {
  plan.header = SafetensorsWriter::encodeHeader(plan.tensors);
  std::vector<uint64_t> offsets;
  uint64_t off = plan.header.size();
  for (const TensorSpec& t : plan.tensors) {
    offsets.push_back(off);
    off += t.nbytes();
  }
  plan.fileSize = off;
  for (PlannedExpert& e : plan.experts) e.offset = offsets[e.offset];
  for (const PlanStep& s : plan.steps) plan.sourceBytes += s.srcBytes;
}

}  // namespace

ShardPlan planShard(const Snapshot& snap, const SourceShard& shard, const BitSettings& bits) {
  return std::move(planShardParts(snap, shard, bits, 1).front());
}

std::vector<ShardPlan> planShardParts(const Snapshot& snap, const SourceShard& shard, const BitSettings& bits,
                                      int roots) {
  const ModelConfig& cfg = snap.config();
  ShardPlan plan;
  plan.source = &shard;
  plan.outputFile = snap.outputShardName(shard.number);
  const SafetensorsFile header = shard.openHeader();
  const uint64_t base = header.dataOffset();

  struct Expert {
    ExpertName name;
    const TensorInfo* t;
  };
  std::vector<const TensorInfo*> dense;
  std::vector<Expert> experts;
  for (size_t i : header.header().offsetOrder()) {
    const TensorInfo& t = header.tensors()[i];
    const TensorClass cls = classifyTensor(t.name, cfg);
    if (cls == TensorClass::Skip || snap.isDropped(t.name)) continue;
    if (cls == TensorClass::Expert) {
      ExpertName en;
      if (!parseExpertName(t.name, en))
        fail(ErrorKind::Format, shard.path, ": tensor '", t.name, "' is not a valid expert name");
      experts.push_back({en, &t});
      continue;
    }
    dense.push_back(&t);
  }

  // 1. Non-expert tensors in ascending source offset order.
  for (const TensorInfo* t : dense) {
    const TensorClass cls = classifyTensor(t->name, cfg);
    const int b = codec::classBits(cls, bits.bits, bits.mlaBits, bits.headBits);
    const codec::StoredForm form =
        codec::storedFormFor(b, t->shape.size() == 2 ? t->shape[1] : 0);  // the shape is checked below
    if (form == codec::StoredForm::KeepFloat) {
      addCopy(plan, *t, base);
      if (isFloatDtype(t->dtype)) plan.floats.push_back({base + t->begin, t->nbytes(), t->dtype, t->name});
      continue;
    }
    if (t->dtype != Dtype::BF16 || t->shape.size() != 2)
      fail(ErrorKind::Unsupported, shard.path, ": tensor '", t->name, "' (class ",
           tensorClassName(cls), ") must be a 2-D BF16 matrix to be quantized, found ",
           dtypeName(t->dtype), " of rank ", t->shape.size());
    const uint64_t O = t->shape[0], I = t->shape[1];
    const codec::StoredTensor data = codec::storedData(form, O, I), scales = codec::storedScales(form, O, I);
    plan.tensors.push_back({t->name, data.dtype, data.shape});
    plan.tensors.push_back({codec::scaleSidecarName(t->name), scales.dtype, scales.shape});
    plan.steps.push_back({form == codec::StoredForm::Int4G64 ? PlanStep::Kind::QuantInt4 : PlanStep::Kind::QuantInt8,
                          base + t->begin, t->nbytes(), O, I, t->name});
    ++plan.quantizedTensors;
  }

  // 2. Experts by (layer, id, part): six back-to-back tensors per expert.
  std::sort(experts.begin(), experts.end(), [](const Expert& a, const Expert& b) {
    return std::tie(a.name.layer, a.name.expert, a.name.part) <
           std::tie(b.name.layer, b.name.expert, b.name.part);
  });
  for (size_t i = 0; i < experts.size(); i += kExpertParts) {
    const ExpertName& head = experts[i].name;
    for (int p = 0; p < kExpertParts; ++p) {
      if (i + static_cast<size_t>(p) >= experts.size() ||
          experts[i + static_cast<size_t>(p)].name.layer != head.layer ||
          experts[i + static_cast<size_t>(p)].name.expert != head.expert ||
          experts[i + static_cast<size_t>(p)].name.part != static_cast<ExpertPart>(p))
        fail(ErrorKind::Missing, shard.path, ": expert (layer ", head.layer, ", id ", head.expert,
             ") does not have its six tensors in this shard");
    }
  }
  // Each layer's experts (in id order) are cut into `roots` equal ranges.
  std::vector<ShardPlan> parts(static_cast<size_t>(std::max(1, roots)));
  parts[0] = std::move(plan);
  for (size_t k = 1; k < parts.size(); ++k) {
    parts[k].source = &shard;
    parts[k].outputFile = spreadPartName(parts[0].outputFile, static_cast<int>(k));
  }
  for (size_t k = 0; k < parts.size(); ++k)
    parts[k].root = parts.size() > 1 ? spreadRootOf(shard.number, static_cast<int>(k), roots) : 0;
  for (size_t i = 0; i < experts.size();) {
    const int layer = experts[i].name.layer;
    size_t end = i;
    while (end < experts.size() && experts[end].name.layer == layer) end += kExpertParts;
    const size_t count = (end - i) / kExpertParts;
    for (size_t x = 0; x < count; ++x, i += kExpertParts) {
      ShardPlan& part = parts[static_cast<size_t>(spreadPartOf(x, count, roots))];
      const ExpertName& head = experts[i].name;
      PlannedExpert pe{head.layer, head.expert, 0, 0};
      const size_t first = part.tensors.size();
      for (int p = 0; p < kExpertParts; ++p) {
        const TensorInfo& t = *experts[i + static_cast<size_t>(p)].t;
        addCopy(part, t, base);
        pe.length += t.nbytes();
        pe.partBytes[p] = t.nbytes();
      }
      pe.offset = first;  // tensor index for now; turned into a file offset by layOut
      part.experts.push_back(pe);
    }
  }
  std::vector<ShardPlan> out;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k > 0 && parts[k].tensors.empty()) continue;
    layOut(parts[k]);
    out.push_back(std::move(parts[k]));
  }
  return out;
}

}  // namespace k3::convert
