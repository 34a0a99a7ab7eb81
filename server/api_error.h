// server/api_error.h — an HTTP error in OpenAI's shape: {"error": {"message", "type", "code"}}.
//
//   throw ApiError(400, "invalid_type", "'max_tokens' must be an integer, got string");
//
// The status picks the type as OpenAI's clients expect it (401 authentication_error, 503
// unavailable_error, other 4xx invalid_request_error, 5xx server_error); `code` is a short
// machine-readable word and the message says what was wrong and where.
#pragma once

#include <stdexcept>
#include <string>

namespace graphrun::server {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string code, const std::string& message)
        : std::runtime_error(message), status_(status), code_(std::move(code)) {}
    int status() const { return status_; }
    const std::string& code() const { return code_; }
    const char* type() const;

  private:
    int status_;
    std::string code_;
};

// {"error": {"message": ..., "type": ..., "code": ..., "param": null}} as text.
std::string api_error_body(int status, const std::string& code, const std::string& message);
std::string api_error_body(const ApiError& error);

}  // namespace graphrun::server
