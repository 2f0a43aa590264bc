#include "k3/serve/delta_reader.h"

#include <thread>

namespace k3::serve {

DeltaReader::DeltaReader(GenerationJob& job, std::chrono::milliseconds interval, std::chrono::milliseconds poll)
    : job_(job), interval_(interval), poll_(poll) {}

bool DeltaReader::take(std::vector<OutputDelta>& out) {
  out.clear();
  std::unique_lock<std::mutex> lock(job_.m);
  job_.cv.wait_for(lock, poll_, [&] { return job_.done || !job_.pending.empty(); });
  if (!job_.done && !job_.pending.empty() && interval_.count() > 0) {
    // Let more tokens gather, off the lock and off the condition variable, so
    // the engine's pushes in the meantime wake nobody.
    const Clock::time_point due = lastHandOver_ + interval_;
    if (Clock::now() < due) {
      lock.unlock();
      std::this_thread::sleep_until(due);
      lock.lock();
    }
  }
  out.swap(job_.pending);
  if (!out.empty()) lastHandOver_ = Clock::now();
  return job_.done;  // everything pushed before done is in `out`
}

}  // namespace k3::serve
