// server/api_error.cpp — see api_error.h.
#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace graphrun::server {

namespace {
const char* type_for(int status) {
    if (status == 401) return "authentication_error";
    if (status == 503) return "unavailable_error";
    if (status >= 500) return "server_error";
    return "invalid_request_error";
}
}  // namespace

const char* ApiError::type() const { return type_for(status_); }

std::string api_error_body(int status, const std::string& code, const std::string& message,
                           const std::string& param) {
    const nlohmann::json body = {{"error",
                                  {{"message", message},
                                   {"type", type_for(status)},
                                   {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                                   {"code", code}}}};
    // Invalid UTF-8 a client sent may be quoted in the message: replaced, never an exception here.
    return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string api_error_body(const ApiError& error) {
    return api_error_body(error.status(), error.code(), error.what(), error.param());
}

}  // namespace graphrun::server
