// The HTTP side of a GenerationJob's output channel: waits for deltas and
// hands them over in batches no more often than once per interval.
//
// Why batch: on a fast model every token would otherwise wake the HTTP thread
// and the client, and on a machine whose cores all run the forward those
// wake-ups land in the middle of its thread-pool barriers (the expected
// cost; scripts/bench_serve --stream-interval-ms 0 vs the default is the
// measurement, not yet taken on a quiet machine). A delta that arrives after a quiet interval goes out
// at once, so time to first token and slow models (seconds per token) see no
// delay; the added latency is at most the interval. Not thread-safe: one
// reader per job.
#pragma once

#include <chrono>
#include <vector>

#include "k3/serve/generation_job.h"

namespace k3::serve {

class DeltaReader {
 public:
  using Clock = std::chrono::steady_clock;
  // interval 0: every wake-up hands over what is there (a batch per token).
  // poll: how long one take() may wait with nothing new (disconnect checks).
  DeltaReader(GenerationJob& job, std::chrono::milliseconds interval, std::chrono::milliseconds poll);

  // Replaces `out` with the deltas produced since the last call (possibly
  // none, after `poll`); true once the job is done and everything it pushed
  // is in `out`.
  bool take(std::vector<OutputDelta>& out);

 private:
  GenerationJob& job_;
  std::chrono::milliseconds interval_, poll_;
  Clock::time_point lastHandOver_{};  // epoch: the first delta goes at once
};

}  // namespace k3::serve
