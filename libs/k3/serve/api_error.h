// An API failure as OpenAI reports it: an HTTP status and the error envelope
// {"error":{"message","type","param","code"}}. Thrown by the request schema
// and the server glue; the HTTP layer turns it into the response.
// Thread-safety: a value (an exception); nothing shared.
#pragma once

#include <stdexcept>
#include <string>

namespace k3::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string param, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // "" = null
  const std::string& code() const { return code_; }    // "" = null

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error naming the offending field.
[[noreturn]] void invalidRequest(const std::string& param, const std::string& message,
                                 const std::string& code = "");

// {"error":{...}} for `e`.
std::string errorEnvelope(const ApiError& e);
std::string errorEnvelope(int status, const std::string& message);  // type from the status

}  // namespace k3::serve
