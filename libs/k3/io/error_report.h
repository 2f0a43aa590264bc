// How a tool reports an error it stops on, the same in all four apps: one
// line on stderr, "APP: <message>", and with --json one object on stdout,
// {"ok":false,"error":"<message>","error_kind":"<kind>"} (k3-verify adds
// "sound":false). The kind is errorKindName(), or "internal" for an
// exception that is not a k3::Error.
// Thread-safety: pure functions.
#pragma once

#include <exception>
#include <string>
#include <string_view>

#include "k3/io/error.h"
#include "k3/io/json_text.h"

namespace k3 {

struct ErrorReport {
  std::string kind;     // "usage", "io", ..., "internal"
  std::string message;  // one line: newlines become spaces

  std::string stderrLine(std::string_view app) const;  // "APP: <message>\n"
  JsonObject json() const;                              // the --json error object, to extend or print
};

ErrorReport errorReport(const std::exception& e);
ErrorReport errorReport(ErrorKind kind, std::string_view message);

}  // namespace k3
