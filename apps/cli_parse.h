// The command-line parse shared by the four apps: --help and --version print
// and exit 0; any parse error (unknown flag, bad value, missing positional)
// is ONE line on stderr in the apps' error form, "APP: <what> (see --help)",
// with the usage exit code (2), and with --json also the JSON error object
// (app_errors.h). CLI11's own two-line message and its exit codes (105,
// 109, ...) never reach the user.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "app_errors.h"
#include "help_format.h"

namespace k3app {

// For unsigned options: CLI11 reads "-1" into a size_t as 2^64-1.
inline CLI::Validator notNegative() {
  return CLI::Validator(
      [](std::string& v) { return v.find('-') != std::string::npos ? "Value " + v + " is negative" : std::string(); },
      "NON-NEGATIVE");
}

// Returns the exit code when the app must stop now (help, version, error),
// nullopt when it should go on. --help is laid out by HelpFormatter. The JSON error object is printed when the
// flags parsed before the error asked for --json.
inline std::optional<int> parseCommandLine(CLI::App& app, const ErrorPolicy& errors, int argc, char** argv) {
  useHelpFormatter(app);
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: CLI11 prints them
    return reportError(errors, k3::errorReport(k3::ErrorKind::Usage, std::string(e.what()) + " (see --help)"));
  }
}

}  // namespace k3app
