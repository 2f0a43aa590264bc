#include "k3/serve/json_body.h"

#include <cmath>

#include "k3/serve/api_error.h"

namespace k3::serve {

simdjson::dom::object parseJsonBody(simdjson::dom::parser& parser, std::string_view body, size_t maxDepth) {
  if (auto err = parser.allocate(body.size() + 64, maxDepth))
    invalidRequest("", std::string("request body: ") + simdjson::error_message(err));
  simdjson::dom::element root;
  if (auto err = parser.parse(body.data(), body.size()).get(root)) {
    if (err == simdjson::DEPTH_ERROR)
      invalidRequest("", "request body: JSON nested deeper than " + std::to_string(maxDepth) + " levels");
    invalidRequest("", std::string("request body is not valid JSON: ") + simdjson::error_message(err));
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) invalidRequest("", "request body must be a JSON object");
  return obj;
}

bool readBool(simdjson::dom::element v, const std::string& key) {
  bool b = false;
  if (v.get_bool().get(b)) invalidRequest(key, "'" + key + "' must be a boolean");
  return b;
}

double readNumber(simdjson::dom::element v, const std::string& key, double lo, double hi) {
  double d = 0;
  if (v.get_double().get(d)) invalidRequest(key, "'" + key + "' must be a number");
  if (!std::isfinite(d) || d < lo || d > hi)
    invalidRequest(key, "'" + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  return d;
}

int64_t readInteger(simdjson::dom::element v, const std::string& key, int64_t lo, int64_t hi) {
  int64_t i = 0;
  if (v.get_int64().get(i)) {
    uint64_t u = 0;
    if (v.get_uint64().get(u)) invalidRequest(key, "'" + key + "' must be an integer");
    i = INT64_MAX;  // beyond int64: out of range below
  }
  if (i < lo || i > hi)
    invalidRequest(key, "'" + key + "' must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return i;
}

std::string readString(simdjson::dom::element v, const std::string& key) {
  std::string_view s;
  if (v.get_string().get(s)) invalidRequest(key, "'" + key + "' must be a string");
  return std::string(s);
}

}  // namespace k3::serve
