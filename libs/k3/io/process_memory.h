// This process's memory, for the tools' end-of-run reports (--json
// peak_rss_bytes) and the tests' RSS bounds. Thread-safe (reads /proc).
#pragma once

#include <cstdint>

namespace k3 {

uint64_t peakRssBytes();     // VmHWM
uint64_t currentRssBytes();  // VmRSS

}  // namespace k3
