// server/request_fields.cpp — see request_fields.h.
#include "server/request_fields.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace graphrun::server::request_fields {

using nlohmann::json;

bool listed(std::span<const std::string_view> names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

void bad(const std::string& param, const std::string& message, const char* code) {
    throw ApiError(400, code, message, param);
}

const char* json_type(const json& v) {
    if (v.is_number_integer()) return "an integer";
    if (v.is_number()) return "a number";
    return v.type_name();
}

const json* field(const json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

void wrong_type(const std::string& name, const char* expected, const json& v) {
    bad(name, "'" + name + "' must be " + expected + ", got " + json_type(v), "invalid_type");
}

void unknown_field(const std::string& name, const std::string& where) {
    bad(name,
        "'" + name + "' is not a field " + where +
            " graphrun serve knows; it is refused rather than ignored (docs/server.md lists the fields)",
        "unknown_field");
}

void unsupported(const std::string& name, const std::string& why) {
    bad(name,
        "'" + name + "' " + why + ", which graphrun serve does not do (docs/server.md lists the fields)",
        "unsupported_value");
}

}  // namespace graphrun::server::request_fields
