// The kernels' instruction-set choice, read by the apps that run kernels
// (k3-run, k3-repack) at the top of main and handed to the library before any
// kernel runs: --isa scalar|avx2|avx512, else the K3_ISA environment variable
// (the user-facing switch for A/B runs), else the best this CPU supports.
// Either lowers the choice; asking above what the CPU has keeps the best.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>

#include "k3/kernels/cpu_features.h"

namespace k3app {

inline CLI::Option* addIsaOption(CLI::App& app, std::string& isa) {
  return app.add_option("--isa", isa,
                        "kernels' instruction set: scalar, avx2 or avx512, at most what this CPU has "
                        "(default: K3_ISA if set, else the best)")
      ->check(CLI::IsMember({"scalar", "avx2", "avx512"}));
}

// Call once, before anything runs a kernel. Throws k3::Error(Usage) for a
// K3_ISA value that names no ISA.
inline void applyIsaChoice(const std::string& isaFlag) {
  std::string want = isaFlag;
  if (want.empty())
    if (const char* env = std::getenv("K3_ISA")) want = env;
  if (!want.empty()) k3::kernels::limitIsa(k3::kernels::parseIsaName(want, isaFlag.empty() ? "K3_ISA" : "--isa"));
}

}  // namespace k3app
