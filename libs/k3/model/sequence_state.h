// One sequence's model state, apart from the forward that advances it: the
// KDA recurrent states and conv windows, the MLA latent caches (allocated
// once at the context capacity), the tokens consumed so far (its position)
// and the logits of its last token. A batch row reads and advances the state
// of the sequence it belongs to; a Session is a batch of one over one of
// these, the server's scheduler keeps one per sequence in flight.
// Thread-safety: not thread-safe; one owner at a time (the forward that runs
// it writes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "k3/format/model_config.h"
#include "k3/model/kda_layer.h"
#include "k3/model/mla_layer.h"

namespace k3::model {

struct SequenceState {
  std::vector<KdaState> kda;  // indexed by layer; MLA layers empty
  std::vector<MlaCache> mla;  // indexed by layer; KDA layers empty
  std::vector<int32_t> tokens;    // consumed so far: the state holds exactly these
  std::vector<float> lastLogits;  // [vocab]: the logits after tokens.back()
  // lastLogits belongs to tokens.back() (false after a forward that asked for
  // no logits of its last row, e.g. a prefill piece or a cancelled feed).
  bool logitsCurrent = false;

  SequenceState(const ModelConfig& c, size_t capacity);
  size_t position() const { return tokens.size(); }
  size_t capacity() const { return capacity_; }  // positions the MLA caches hold (--ctx)
  void reset();                                  // back to position 0, nothing allocated anew
  // Bytes one sequence holds at `capacity` (KDA states, conv windows, MLA
  // caches, tokens, last logits): what --parallel multiplies.
  static uint64_t bytesFor(const ModelConfig& c, size_t capacity);

 private:
  size_t capacity_;
};

// The state at one point of a sequence's history, complete: resuming from it
// needs nothing of the sequence it was taken from. The KDA recurrent states
// and conv windows, the MLA latent rows of every position so far, the
// tokens, and the last logits (so generation can start without refeeding).
struct MlaRowsCopy {
  std::vector<float> L;  // [tokens × kv_lora_rank]
  std::vector<float> R;  // [tokens × rope dims]
};
struct StateSnapshot {
  std::vector<KdaState> kda;  // indexed by layer; MLA layers empty
  std::vector<MlaRowsCopy> mla;   // indexed by layer; KDA layers empty
  std::vector<int32_t> tokens;
  std::vector<float> lastLogits;
  size_t bytes() const;  // memory held
};

// Copies the current state (its logits must be current).
StateSnapshot snapshotOf(const SequenceState& s);
// Brings `s` to `snap`, into any sequence of the same model: KDA states and
// logits copied back; the MLA rows copied in, or only cut to its length when
// snap.tokens is a prefix of s.tokens (the live rows are those already).
// Throws Usage for a snapshot of another shape (another model, or more
// tokens than s.capacity()), changing nothing.
void restoreTo(SequenceState& s, const StateSnapshot& snap);

}  // namespace k3::model
