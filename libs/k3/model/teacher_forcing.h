// Teacher-forced evaluation: feed a fixed id sequence through a Session, keep
// every position's logits (optionally written to a LogitsWriter) and their
// argmax, and score each next id by its negative log-likelihood, the sum
// perplexity is made of. k3-run's --ids and --perplexity modes use it.
// Thread-safety: the functions hold no state; teacherForce drives the one
// Session it is given, which must not be fed from elsewhere meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "k3/model/logits_writer.h"
#include "k3/model/session.h"

namespace k3::model {

struct TeacherForcedResult {
  size_t positions = 0;  // ids fed
  double nll = 0.0;      // summed over the predicted positions, nats
  size_t predicted = 0;  // positions with a next id to score (positions - 1 when scored)
  std::vector<int32_t> argmax;  // one per position

  // exp(mean NLL); only meaningful when predicted > 0.
  double perplexity() const;
};

// -log softmax(logits)[target] over `vocab` logits, computed in double around
// the maximum logit so large logits do not overflow.
double nextTokenNll(const float* logits, size_t vocab, size_t target);

// Feeds `ids` one session chunk at a time; `out` (may be null) receives the
// f32 logits of every position in order. With `score`, each position but the
// last adds the NLL of the id that follows it.
TeacherForcedResult teacherForce(Session& s, const std::vector<int32_t>& ids, LogitsWriter* out, bool score);

}  // namespace k3::model
