// Crash-safe small-file helpers: whole-file reads, atomic replace (temp file,
// fsync, rename, directory fsync) and directory fsync. Used for the index,
// manifest fragments and copied config files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace k3 {

// Reads a whole file; throws Io (Missing if it does not exist).
std::string readWholeFile(const std::string& path);

// Writes `bytes` to `<path>.tmp-<pid>`, fsyncs, renames over `path` and fsyncs
// the directory. Throws Io / NoSpace naming the path; never leaves a partial
// file under `path`.
void writeFileAtomic(const std::string& path, std::string_view bytes);

// Copies `src` to `dst` atomically (as writeFileAtomic).
void copyFileAtomic(const std::string& src, const std::string& dst);

void fsyncDirectory(const std::string& dir);

// Returns the directory part of `path` ("." when none).
std::string parentDirectory(const std::string& path);

}  // namespace k3
