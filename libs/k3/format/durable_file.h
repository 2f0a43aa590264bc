// Crash-safe small-file writes: atomic replace (temp file, fsync, rename,
// directory fsync). Reads go through k3/io/input_file.h. Used for
// the index, manifest fragments and copied config files.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "k3/io/input_file.h"
#include "k3/io/output_file.h"  // fsyncDirectory, parentDirectory

namespace k3 {

// Writes `bytes` to `<path>.tmp-<pid>`, fsyncs, renames over `path` and fsyncs
// the directory (k3::AtomicOutput). Throws Io / NoSpace naming the path, Usage
// if `path` is one of `inputs` or not a regular file; never leaves a partial
// file under `path` nor the temp.
void writeFileAtomic(const std::string& path, std::string_view bytes, std::span<const FileId> inputs = {});

}  // namespace k3
