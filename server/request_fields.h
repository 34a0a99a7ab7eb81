// server/request_fields.h — reading the fields of a request body, for every endpoint's parser
// (api_request.cpp, embedding_request.cpp): each error is an ApiError 400 whose `param` names the
// field as the message does ("stop[2]", "input[1]"), so every endpoint words them alike.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

namespace graphrun::server::request_fields {

// Whether `name` is one of `names` (the fields an endpoint knows, honours or accepts).
bool listed(std::span<const std::string_view> names, const std::string& name);
// A 400 about the field `param` (as the message names it: "stop[2]", "messages[0].role").
[[noreturn]] void bad(const std::string& param, const std::string& message,
                      const char* code = "invalid_value");
// "an integer", "a number", "string", ...: what a value is, for messages.
const char* json_type(const nlohmann::json& v);
// The field when present and not null, else nullptr.
const nlohmann::json* field(const nlohmann::json& body, const char* name);
// "'max_tokens' must be an integer, got string" (invalid_type).
[[noreturn]] void wrong_type(const std::string& name, const char* expected, const nlohmann::json& v);
// A field no request of this endpoint may carry: a misspelt name, or a field of OpenAI's API that
// graphrun does not know. Refused, so that no client mistakes an answer for one that applied it.
// `where` completes "is not a field ... graphrun serve knows" ("of a message", "of /v1/embeddings").
[[noreturn]] void unknown_field(const std::string& name, const std::string& where);
// A field graphrun knows but does not honour (yet) with this value: refused, naming it.
[[noreturn]] void unsupported(const std::string& name, const std::string& why);

}  // namespace graphrun::server::request_fields
