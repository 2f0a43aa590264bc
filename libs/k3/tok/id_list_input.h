// Token-id lists from a command line: the one grammar of k3-run's --ids and
// --prompt-ids and k3-tokgen's decode and parse ids. Ids are decimal,
// separated by commas and/or whitespace, optionally inside [ ] (a JSON
// array); an empty item ("1,,2", a leading or trailing comma), any other
// character, an id past 2^32-1 or, when the vocabulary is known, past it, is
// a one-line Usage error naming where the list came from and the offset.
// Thread-safety: pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace k3::tok {

// `origin` names the list in errors ("--ids", "ids.txt"); vocabSize 0 = any id.
std::vector<uint32_t> parseIds(std::string_view text, std::string_view origin = "token ids",
                               uint64_t vocabSize = 0);

// `spec` is "-" (stdin), an existing path (read through openInputFile with
// the id-list cap: no FIFOs, devices or directories, at most 256 MiB), or the
// list itself. Errors are prefixed with `flag`; an empty list is an error.
std::vector<uint32_t> readIdList(const std::string& spec, std::string_view flag, uint64_t vocabSize = 0);

}  // namespace k3::tok
