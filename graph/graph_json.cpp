// graph/graph_json.cpp — parsing a graph file's JSON and quoting it in error messages.
#include "graph/graph_json.h"

#include "graph/graph.h"
#include "runtime/json_depth.h"
#include "graph/limits.h"

namespace graphrun::graph {

namespace {

// The JSON library and the binder recurse once per level of nesting, so a hostile file of 70,000
// nested arrays would overflow the stack: the depth is measured on the text before parsing.
void check_nesting(const std::string& text, const std::string& path) {
    if (const size_t at = json_too_deep_at(text, kMaxGraphDepth); at != std::string_view::npos)
        throw GraphError(path + ": arrays and objects nest deeper than " + std::to_string(kMaxGraphDepth) +
                         " levels at byte " + std::to_string(at) + " (graph/limits.h)");
}

}  // namespace

Json parse_graph_json(const std::string& text, const std::string& path) {
    check_nesting(text, path);
    try {
        return Json::parse(text);
    } catch (const Json::exception& e) {  // parse_error, or out_of_range for a number past a double (graph_fuzz)
        throw GraphError(path + ": not valid JSON: " + e.what());
    }
}

std::string excerpt(const Json& value) {
    std::string text = value.dump();
    return text.size() <= 120 ? text : text.substr(0, 120) + "...";
}

std::string excerpt_text(const Json& value) {
    if (!value.is_string()) return excerpt(value);
    const std::string text = value.get<std::string>();
    return text.size() <= 240 ? text : text.substr(0, 240) + "...";
}

}  // namespace graphrun::graph
