// graph/graph_file.cpp — reading a graph file and finding the graph for an architecture.
#include "graph/graph.h"

#include <algorithm>
#include <filesystem>

#include "graph/data_files.h"
#include "graph/graph_json.h"
#include "graph/limits.h"
#include "runtime/bounded_read.h"

namespace graphrun::graph {

GraphFile graph_file_from_string(std::string json_text, std::string name) {
    GraphFile file;
    file.path = std::move(name);
    const Json root = parse_graph_json(json_text, file.path);
    if (!root.is_object()) throw GraphError(file.path + ": the top level must be a JSON object");
    for (const char* field : {"architecture", "nodes", "outputs"})
        if (!root.contains(field)) throw GraphError(file.path + ": missing top-level field '" + field + "'");
    if (!root["architecture"].is_string())
        throw GraphError(file.path + ": field 'architecture' must be a string");
    file.architecture = root["architecture"].get<std::string>();
    file.json_text = std::move(json_text);
    return file;
}

GraphFile load_graph_file(const std::string& path) {
    try {
        return graph_file_from_string(read_bounded_file(path, kMaxGraphFileBytes, "a graph file"), path);
    } catch (const FileReadError& e) {
        throw GraphError(std::string(e.what()) + " (graph file)");
    }
}

std::string default_graph_path() { return find_data_file("models/llama.json"); }
std::string default_model_path() { return find_data_file("models/kjv-q8_0.gguf"); }

std::vector<std::string> graph_architectures() {
    std::vector<std::string> names;
    for (const DataFolder& folder : data_search_path()) {
        std::error_code error;
        for (const auto& entry : std::filesystem::directory_iterator(folder.path + "/models", error)) {
            const std::string stem = entry.path().stem().string();
            if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
            // models/ holds other JSON too (expected outputs): a graph is a file that runs its own name.
            try {
                if (load_graph_file(entry.path().string()).architecture == stem) names.push_back(stem);
            } catch (const GraphError&) {
            }
        }
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

std::string graph_path_for(const std::string& architecture) {
    auto refuse = [&](const std::string& why) -> std::string {
        std::string known;
        for (const std::string& name : graph_architectures()) known += (known.empty() ? "" : ", ") + name;
        throw GraphError("no graph for architecture '" + architecture + "' (" + why + "); graphs exist for " +
                         (known.empty() ? "none" : known) + "; give one with --graph FILE.json");
    };
    // An architecture names a file: nothing that could step out of the folder.
    if (architecture.empty() || architecture.find_first_of("/\\") != std::string::npos || architecture[0] == '.')
        return refuse("not a plain name");
    try {
        return find_data_file("models/" + architecture + ".json");
    } catch (const DataFileError& e) {
        return refuse(e.what());
    }
}

}  // namespace graphrun::graph
