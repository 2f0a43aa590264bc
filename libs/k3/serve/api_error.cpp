#include "k3/serve/api_error.h"

#include "k3/io/json_text.h"

namespace k3::serve {

namespace {
// A message quoting client text (a key, a value) stays one line: control
// characters are shown escaped.
std::string oneLine(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(static_cast<unsigned char>(c) >> 4) & 15];
      out += hex[c & 15];
    } else {
      out += c;
    }
  }
  return out;
}
}  // namespace

void invalidRequest(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, "invalid_request_error", oneLine(param), code, oneLine(message));
}

namespace {
std::string orNull(const std::string& s) { return s.empty() ? "null" : jsonString(s); }

const char* typeFor(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}
}  // namespace

std::string errorEnvelope(const ApiError& e) {
  return "{\"error\":{\"message\":" + jsonString(e.what()) + ",\"type\":" + jsonString(e.type()) +
         ",\"param\":" + orNull(e.param()) + ",\"code\":" + orNull(e.code()) + "}}";
}

std::string errorEnvelope(int status, const std::string& message) {
  return errorEnvelope(ApiError(status, typeFor(status), "", "", message));
}

}  // namespace k3::serve
