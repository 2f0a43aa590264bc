#include "k3/io/progress_meter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

namespace k3 {

bool stderrIsTerminal() { return ::isatty(2) == 1; }

ProgressMeter::ProgressMeter(uint64_t totalBytes, bool enabled)
    : total_(totalBytes), enabled_(enabled), start_(std::chrono::steady_clock::now()), lastDraw_(start_) {
  if (enabled_ && totalBytes) draw(false);  // the size to do, from the start
}

void ProgressMeter::setLabel(std::string label) {
  std::lock_guard<std::mutex> lk(mu_);
  label_ = std::move(label);
}

void ProgressMeter::setTotal(uint64_t totalBytes) {
  total_ = totalBytes;
  if (!enabled_ || !totalBytes) return;
  std::lock_guard<std::mutex> lk(mu_);
  draw(false);
}

double ProgressMeter::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void ProgressMeter::add(uint64_t bytes) {
  done_ += bytes;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lk(mu_);
  if (now - lastDraw_ < std::chrono::milliseconds(200)) return;
  lastDraw_ = now;
  draw(false);
}

void ProgressMeter::finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lk(mu_);
  draw(true);
}

// Bytes in the unit the total reads best in (a 2 MB model is not "0.00 GB").
static std::pair<double, const char*> unitFor(uint64_t bytes) {
  if (bytes >= 1'000'000'000) return {1e9, "GB"};
  if (bytes >= 1'000'000) return {1e6, "MB"};
  return {1e3, "kB"};
}

void ProgressMeter::draw(bool final) {
  const double secs = seconds();
  const uint64_t done = done_.load(), total = total_.load();
  const auto [unit, name] = unitFor(std::max(done, total));
  const double amount = static_cast<double>(done) / unit, totalAmount = static_cast<double>(total) / unit;
  const double rate = secs > 0 ? amount / secs : 0;
  const double frac = total ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  char bar[31];
  const int fill = static_cast<int>(frac * 30);
  for (int i = 0; i < 30; ++i) bar[i] = i < fill ? '#' : '.';
  bar[30] = 0;
  char eta[32] = "--";
  if (rate > 0 && !final) {
    const long s = static_cast<long>((totalAmount - amount) / rate);
    std::snprintf(eta, sizeof eta, "%ld:%02ld", s / 60, s % 60);
  }
  std::fprintf(stderr, "\r[%s] %5.1f%% %7.2f/%.2f %s %5.2f %s/s ETA %s %-40.40s%s", bar, frac * 100, amount,
               totalAmount, name, rate, name, eta, label_.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace k3
