#include "k3/io/process_memory.h"

#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace k3 {

namespace {
uint64_t statusKb(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0) {
      std::sscanf(line + n, " %lu", &kb);
      break;
    }
  std::fclose(f);
  return kb;
}
}  // namespace

uint64_t peakRssBytes() { return statusKb("VmHWM:") * 1024; }
uint64_t currentRssBytes() { return statusKb("VmRSS:") * 1024; }

uint64_t physicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : UINT64_MAX;
}

}  // namespace k3
