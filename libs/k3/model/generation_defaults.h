// The sampling defaults every front end shares (k3-run -p/--chat, the API,
// the web page): the container's generation_config.json (temperature, top_p,
// top_k, min_p; do_sample false = greedy) where it has one, else OpenAI's T = 1,
// top_p = 1. Flags and request fields override them one by one.
// Thread-safety: a pure reader.
#pragma once

#include <string>
#include <string_view>

#include "k3/model/sampler.h"

namespace k3::model {

struct GenerationDefaults {
  SamplerOptions sampling{1.0f, 0, 1.0f, 0};  // seed: unused (a run without one draws its own)
  std::string source = "built-in";            // "generation_config.json" when read from the container
};

// dir/generation_config.json when present (a regular file), else the built-in
// defaults. A field of the wrong type or out of range is a one-line Config
// error naming the file and the field; unknown fields are ignored (HF writes
// eos ids, max lengths, … there).
GenerationDefaults readGenerationDefaults(const std::string& dir);
GenerationDefaults parseGenerationDefaults(std::string_view json, const std::string& path);

// A seed for a sampled run that was given none: drawn from the OS.
uint64_t drawSeed();

}  // namespace k3::model
