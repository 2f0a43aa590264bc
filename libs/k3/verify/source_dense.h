// The dense half of k3-verify --source: every non-expert container tensor
// against the source snapshot. A tensor stored as its source (same dtype and
// shape) must equal it byte for byte; a quantized one (U8 + .qs sidecar) must
// equal the source BF16 matrix quantized again with the converter's own
// quantizer (int8 per row or int4-g64, spec 5.3/5.4; bit-exact on every ISA),
// payload and sidecar. Anything else is a Source problem naming the tensor.
// Thread-safety: runs its own pool (HashOptions::threads); call from one thread
// with a report nobody else is writing.
#pragma once

#include <cstdint>

#include "k3/verify/container_checker.h"
#include "k3/verify/hash_pass.h"
#include "k3/verify/source_index.h"
#include "k3/verify/verify_report.h"

namespace k3::verify {

// Returns the bytes read (container and source).
uint64_t compareDenseWithSource(const SourceIndex& source, const ContainerFacts& facts, const HashOptions& opts,
                                VerifyReport& report);

}  // namespace k3::verify
