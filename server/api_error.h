// server/api_error.h — an HTTP error in OpenAI's shape: {"error": {"message", "type", "param", "code"}}.
//
//   throw ApiError(400, "invalid_type", "'max_tokens' must be an integer, got string", "max_tokens");
//
// The status picks the type as OpenAI's clients expect it (401 authentication_error, 503
// unavailable_error, other 4xx invalid_request_error, 5xx server_error); `code` is a short
// machine-readable word and the message says what was wrong and where. `param` is the request
// field the error is about, as the message names it ("max_tokens", "messages[2].content",
// "logit_bias"); empty (answered as null) when no one field is to blame.
#pragma once

#include <stdexcept>
#include <string>

namespace graphrun::server {

class ApiError : public std::runtime_error {
  public:
    ApiError(int status, std::string code, const std::string& message, std::string param = {})
        : std::runtime_error(message), status_(status), code_(std::move(code)), param_(std::move(param)) {}
    int status() const { return status_; }
    const std::string& code() const { return code_; }
    const std::string& param() const { return param_; }
    const char* type() const;

  private:
    int status_;
    std::string code_;
    std::string param_;
};

// {"error": {"message": ..., "type": ..., "param": ... or null, "code": ...}} as text.
std::string api_error_body(int status, const std::string& code, const std::string& message,
                           const std::string& param = {});
std::string api_error_body(const ApiError& error);

}  // namespace graphrun::server
