// PhaseTime: seconds a run spends in one stage (reading, hashing, quantizing,
// waiting for the writer, ...), summed over every thread that enters it, for
// the tools' --json phase breakdown (issue 22). Atomic, so pipeline threads
// add to the same counter; a steady_clock pair per call, so only wrap calls
// that move megabytes or happen once per tensor, never per row.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace k3 {

class PhaseTime {
 public:
  using Clock = std::chrono::steady_clock;
  void add(Clock::duration d) {
    ns_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()),
                  std::memory_order_relaxed);
    calls_.fetch_add(1, std::memory_order_relaxed);
  }
  double seconds() const { return static_cast<double>(ns_.load(std::memory_order_relaxed)) * 1e-9; }
  uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> ns_{0};
  std::atomic<uint64_t> calls_{0};
};

// Adds the time from construction to destruction to `t` (no-op when null).
class PhaseScope {
 public:
  explicit PhaseScope(PhaseTime* t) : t_(t), start_(t ? PhaseTime::Clock::now() : PhaseTime::Clock::time_point{}) {}
  ~PhaseScope() {
    if (t_) t_->add(PhaseTime::Clock::now() - start_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseTime* t_;
  PhaseTime::Clock::time_point start_;
};

}  // namespace k3
