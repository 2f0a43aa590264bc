// The start gate of k3-run (prompt, chat, evaluation and --serve alike): the
// fast checks of k3-verify (shard headers and sizes, index <-> headers,
// every tensor's dtype and shape against config.json, the manifest against
// both) before the container is mapped, so k3-run never runs on a container
// k3-verify would reject: an invalid manifest, a missing index, a
// num_hidden_layers smaller than the container, a dtype changed U8 -> I8.
// Reads headers and the small JSON files only (milliseconds on tiny, well
// under a second on K3's 1.5 TB). What it read is handed on, so the opener
// (ModelWeights::open) does not read the container again. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "k3/format/checked_container.h"

namespace k3::verify {

// Throws k3::Error naming the container and the first problem (and how many
// more there are; `k3-verify DIR` lists them) unless the fast checks find
// nothing. Files in the container that the manifest does not list are not
// the gate's business (k3-run never reads them): only k3-verify reports those.
// A directory without k3-manifest.json is let through, for the opener's
// "not a k3 container (convert it first)" message.
// `spread`: a spread container's other roots where they are now (k3-run
// --spread), else the roots its manifest records.
// Returns the config and shard headers the checks read (for
// ModelWeights::open), or nothing for a directory that is not a container.
std::optional<CheckedContainer> checkContainerGate(const std::string& dir,
                                                   const std::vector<std::string>& spread = {});

}  // namespace k3::verify
