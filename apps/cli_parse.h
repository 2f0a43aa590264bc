// The command-line parse shared by the four apps: --help and --version print
// and exit 0; any parse error (unknown flag, bad value, missing positional)
// is ONE line on stderr in the apps' error form, "APP: <what> (see --help)",
// with exit code 2 (usage). CLI11's own two-line message and its exit codes
// (105, 109, ...) never reach the user.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <string>

namespace k3app {

// For unsigned options: CLI11 reads "-1" into a size_t as 2^64-1.
inline CLI::Validator notNegative() {
  return CLI::Validator(
      [](std::string& v) { return v.find('-') != std::string::npos ? "Value " + v + " is negative" : std::string(); },
      "NON-NEGATIVE");
}

// Returns the exit code when the app must stop now (help, version, error),
// nullopt when it should go on.
inline std::optional<int> parseCommandLine(CLI::App& app, const char* appName, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: CLI11 prints them
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n' || c == '\r') c = ' ';
    std::fprintf(stderr, "%s: %s (see --help)\n", appName, what.c_str());
    return 2;
  }
}

}  // namespace k3app
