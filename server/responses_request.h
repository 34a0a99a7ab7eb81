// server/responses_request.h — the body of POST /v1/responses (OpenAI's Responses API, its stateless
// part), checked and turned into the chat completion it runs as.
//
//   input "text" or [items]   -> messages: message items (roles user, system, developer,
//                                 assistant; input_text / output_text parts), function_call items
//                                 (an assistant message's tool_calls), function_call_output items
//                                 (role tool messages)
//   instructions              -> a system message first
//   max_output_tokens         -> max_tokens;   temperature, top_p, parallel_tool_calls as they are
//   tools [{type: function, name, description, parameters, strict}] -> chat's nested tools
//   tool_choice {type: function, name}                               -> chat's {function: {name}}
//   text.format json_schema {name, schema, strict} / json_object     -> response_format
//
// The chat completion's own checks (api_request.h) then run on the result, so both endpoints accept
// and refuse alike; their errors name the Responses field (`tools[0].parameters`, `text.format.schema`,
// `max_output_tokens`), not the chat one. What needs state kept between requests (previous_response_id,
// conversation, store true, background true, stored prompts) and built-in tools (web_search, ...) is a
// 400 naming the field in `param`; docs/server.md lists every field. Throws nothing but ApiError.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/api_request.h"

namespace graphrun::server {

struct ResponsesRequest {
    CompletionRequest chat;  // what runs: a chat completion of one choice
    // The request's fields that the Response object repeats (instructions, max_output_tokens, tools,
    // tool_choice, parallel_tool_calls, text, metadata, temperature, top_p), their defaults filled in.
    nlohmann::json echoed = nlohmann::json::object();
};

ResponsesRequest parse_responses_request(const std::string& body);
ResponsesRequest parse_responses_request(const nlohmann::json& body);

// The chat completion body a Responses body stands for (the function above parses it); exposed for
// the tests. Refuses what the Responses API has and chat does not map (input_image, built-in tools).
nlohmann::json responses_chat_body(const nlohmann::json& body);

}  // namespace graphrun::server
