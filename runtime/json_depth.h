// runtime/json_depth.h — how deep a JSON text's arrays and objects nest, measured on the text before
// a parser sees it: a parser's stack and memory grow with the nesting, so a few megabytes of '['
// can take the stack (a recursive reader) or hundreds of megabytes (any reader).
#pragma once

#include <cstddef>
#include <string_view>

namespace graphrun::graph {

// The byte offset of the first '[' or '{' that opens level max_depth + 1 (outside strings), or
// std::string_view::npos when the text nests no deeper than max_depth.
size_t json_too_deep_at(std::string_view text, int max_depth);

}  // namespace graphrun::graph
