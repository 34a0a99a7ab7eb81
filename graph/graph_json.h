// graph/graph_json.h — the JSON side of graph files, shared by the reader (graph_file.cpp) and the
// binder (bind_graph.cpp): parsing with the nesting limit, and short excerpts for error messages.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace graphrun::graph {

using Json = nlohmann::ordered_json;

// The text as JSON, or a GraphError naming `path`: too deeply nested (graph/limits.h), not JSON, or
// holding a number too large for a double.
Json parse_graph_json(const std::string& text, const std::string& path);

// A JSON value for an error message, cut short: a hostile node can be megabytes long.
std::string excerpt(const Json& value);

// A string from the graph for an error message (a check's "why"), cut short like excerpt.
std::string excerpt_text(const Json& value);

}  // namespace graphrun::graph
