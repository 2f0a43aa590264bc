// ProgressMeter: a one-line `\r` progress bar on stderr (bytes, GB/s, ETA),
// drawn only when stderr is a terminal and at most ~5 times a second.
// add() is thread-safe; drawing happens on the caller of add()/finish().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace k3::convert {

class ProgressMeter {
 public:
  ProgressMeter(uint64_t totalBytes, bool enabled);
  void setLabel(std::string label);
  void add(uint64_t bytes);
  void finish();  // final line + newline (when enabled)
  uint64_t done() const { return done_.load(); }
  double seconds() const;

 private:
  void draw(bool final);

  uint64_t total_;
  bool enabled_;
  std::atomic<uint64_t> done_{0};
  std::chrono::steady_clock::time_point start_, lastDraw_;
  std::mutex mu_;
  std::string label_;
};

bool stderrIsTerminal();

}  // namespace k3::convert
