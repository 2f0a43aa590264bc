// Expert top-p (k3-run --expert-top-p P; the peer's optional TOPP knob, spec
// §6.6 note): per token and MoE layer, the routed experts that carry little
// weight are dropped, so a decode step reads fewer expert bytes, at a
// measured quality cost (docs/QUALITY.md). Not part of the model: P = 1 (the
// default) means off, and the forward then does not call it at all.
// Thread-safety: pure functions; safe from any thread.
#pragma once

namespace k3::model {

// Throws a Usage error unless 0 < p <= 1 (NaN included), naming `what`.
void checkExpertTopP(float p, const char* what);

// One token's top-k routing (routeToken's ids and weights, which sum to 1:
// spec §6.6 applies no routed scaling factor) is reordered by weight,
// descending (equal weights: the lower expert id first). The shortest prefix
// whose running f32 sum of weights reaches p is kept (at least one expert,
// all k if the sum never does), and the kept weights are renormalised over
// that sum (+1e-20, as routeToken's), so they again sum to what all k did.
// Returns the number kept; ids/weights[0, kept) are the kept experts.
int keepExpertTopP(int* ids, float* weights, int k, float p);

}  // namespace k3::model
