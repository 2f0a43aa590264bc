#include "k3/io/error_report.h"

namespace k3 {

ErrorReport errorReport(ErrorKind kind, std::string_view message) {
  ErrorReport r{errorKindName(kind), std::string(message)};
  for (char& c : r.message)
    if (c == '\n' || c == '\r') c = ' ';
  return r;
}

ErrorReport errorReport(const std::exception& e) {
  if (const auto* k = dynamic_cast<const Error*>(&e)) return errorReport(k->kind(), k->what());
  return errorReport(ErrorKind::Internal, std::string("internal error: ") + e.what());
}

std::string ErrorReport::stderrLine(std::string_view app) const {
  return std::string(app) + ": " + message + "\n";
}

JsonObject ErrorReport::json() const {
  JsonObject j;
  j.add("ok", false).add("error", message).add("error_kind", kind);
  return j;
}

}  // namespace k3
