// What a checkpoint was computed under, as one digest: the container (its
// k3-manifest.json, which records every shard's SHA-256; config.json when a
// container has none) and the run options that change the numbers
// (activation precision, expert top-p, the kernels' ISA). A checkpoint is
// only ever resumed under the same digest.
// Thread-safety: a pure function (reads files).
#pragma once

#include <string>

#include "k3/io/sha256.h"

namespace k3::serve {

// `numerics`: the options that change the numbers, as text (e.g.
// "activations=int8 expert_top_p=1 isa=avx512").
Sha256Digest containerIdentity(const std::string& dir, const std::string& numerics);

}  // namespace k3::serve
