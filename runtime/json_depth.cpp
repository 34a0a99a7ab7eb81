// runtime/json_depth.cpp — see json_depth.h.
#include "runtime/json_depth.h"

namespace graphrun::graph {

size_t json_too_deep_at(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t at = 0; at < text.size(); ++at) {
        const char c = text[at];
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return at;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return std::string_view::npos;
}

}  // namespace graphrun::graph
