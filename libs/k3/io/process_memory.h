// This process's memory, for the tools' end-of-run reports (--json
// peak_rss_bytes) and the tests' RSS bounds, and the machine's, for
// refusing options that cannot fit. Thread-safe (reads /proc, sysconf).
#pragma once

#include <cstdint>

namespace k3 {

uint64_t peakRssBytes();     // VmHWM
uint64_t currentRssBytes();  // VmRSS
uint64_t physicalMemoryBytes();  // RAM installed (UINT64_MAX if unknown)

}  // namespace k3
