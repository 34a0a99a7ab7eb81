// tests/common/graph_test_util.h — the shipped llama.json as text, and editing it, for graph tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "graph/graph.h"

namespace graphrun::testing {

inline std::string llama_json() {
    std::ifstream in(graph::default_graph_path());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// `text` with the first `from` replaced by `to`; a `from` that is not there fails the test.
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not found";
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

}  // namespace graphrun::testing
