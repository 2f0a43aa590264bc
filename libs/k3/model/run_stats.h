// Process-level figures for the end-of-run report.
#pragma once

#include <cstdint>

namespace k3::model {

uint64_t peakRssBytes();     // VmHWM
uint64_t currentRssBytes();  // VmRSS

}  // namespace k3::model
