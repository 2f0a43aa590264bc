#include "k3/serve/api_error.h"

#include "k3/io/json_text.h"

namespace k3::serve {

void invalidRequest(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, "invalid_request_error", param, code, message);
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
