// Counters for GET /metrics in Prometheus' text format: requests by path and
// status, and the engine's token, time, queue, batch, slot and expert-streaming
// figures; GET /slots.
// Thread-safety: RequestCounters is thread-safe (one mutex: handler threads
// count concurrently); the text writer is pure.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "k3/serve/connection_loop.h"
#include "k3/serve/engine.h"

namespace k3::serve {

class RequestCounters {
 public:
  void count(const std::string& path, int status);
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const;

 private:
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, uint64_t> byPathStatus_;
};

// GET /slots: {"slots":[{"id","state","prompt_tokens","fed_tokens",
// "cached_tokens","generated_tokens","tokens_per_second"}, …]}, one per
// --parallel slot (state idle | prefill | decode).
std::string slotsJson(const EngineStats& engine);

std::string prometheusText(const RequestCounters& requests, const EngineStats& engine, size_t queueDepth,
                           size_t queueCapacity);

// The connection loop's gauges and counters (open, refused at the cap, timed out, idle closed).
std::string connectionMetricsText(const ConnectionStats& c, size_t maxConnections);

}  // namespace k3::serve
