// How much of a file the page cache already holds, and what that means for
// reading it: on these VMs inserting pages into the cache costs more CPU than
// the disk's own time (a cold buffered `cat` of 4.3 GB: 8.3 s of system time,
// 0.5 GB/s; O_DIRECT at 8-16 MiB requests: 1.2-1.7 GB/s), so files not yet
// cached are read with O_DIRECT, files already cached are copied from the
// cache (k3-repack's source shards, k3-verify's container shards).
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace k3 {

// How a tool reads its big files: Auto = Direct unless most of the file is
// already in the page cache (see pageCacheFraction).
enum class ReadMode { Auto, Buffered, Direct };

// Parses "auto" / "buffered" / "direct" (Usage error naming `flag` otherwise).
ReadMode parseReadMode(const std::string& text, const char* flag = "--io");

// Fraction of the file's pages in the page cache (mincore; 0 if unknown).
double pageCacheFraction(int fd, uint64_t size);
double pageCacheFraction(const std::string& path);

// Drops the file's pages from the page cache except those a process maps
// (POSIX_FADV_DONTNEED), so the next reads fill it again: k3-run --recache
// has its weights read back in 2 MiB pages. Io error naming the path.
void dropFromPageCache(const std::string& path);

// Auto resolved for one file: Direct when less than half of it is cached.
bool readsDirect(ReadMode mode, int fd, uint64_t size);
bool readsDirect(ReadMode mode, const std::string& path);

}  // namespace k3
