// The one error path of the four apps (k3/io/error_report.h has the forms):
// an error the app stops on is one line on stderr, "APP: <message>", and
// with --json also the JSON error object on stdout, {"ok":false,
// "error":...,"error_kind":...}. Exit codes: 2 for usage, 1 for any other
// error, except where an app says otherwise (k3-verify: 2 for every error,
// since its 1 means "problems found").
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "k3/io/error.h"
#include "k3/io/error_report.h"

namespace k3app {

struct ErrorPolicy {
  const char* app;
  std::function<bool()> json = {};  // --json was asked for (may be empty: never)
  int usageExit = 2;
  int errorExit = 1;
  std::function<void(k3::JsonObject&)> extendJson = {};  // app-specific fields after the common ones
};

inline int reportError(const ErrorPolicy& p, const k3::ErrorReport& r) {
  std::fputs(r.stderrLine(p.app).c_str(), stderr);
  if (p.json && p.json()) {
    k3::JsonObject j = r.json();
    if (p.extendJson) p.extendJson(j);
    std::fflush(stderr);
    std::printf("%s\n", j.str().c_str());
  }
  return r.kind == k3::errorKindName(k3::ErrorKind::Usage) ? p.usageExit : p.errorExit;
}

// Runs `body` (returning the exit code); any exception becomes the report.
template <class Body>
int runReportingErrors(const ErrorPolicy& p, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return reportError(p, k3::errorReport(e));
  }
}

}  // namespace k3app
