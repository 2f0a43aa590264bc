// ProgressMeter: the tools' one progress bar, a `\r` line on stderr (bytes,
// GB/s, ETA, a label), drawn only when enabled (the apps pass "stderr is a
// terminal") and at most ~5 times a second. add() and setTotal() are
// thread-safe (k3-verify's hash threads add concurrently); drawing happens on
// the caller of add()/finish().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace k3 {

class ProgressMeter {
 public:
  ProgressMeter(uint64_t totalBytes, bool enabled);
  void setLabel(std::string label);
  void setTotal(uint64_t totalBytes);  // when it is known only after the meter exists
  void add(uint64_t bytes);
  void finish();  // final line + newline (when enabled)
  uint64_t done() const { return done_.load(); }
  double seconds() const;

 private:
  void draw(bool final);

  std::atomic<uint64_t> total_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_, lastDraw_;
  std::mutex mu_;
  std::string label_;
};

bool stderrIsTerminal();

}  // namespace k3
