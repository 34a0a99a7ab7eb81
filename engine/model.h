// engine/model.h — a loaded model: the mapped GGUF file and the graph bound to it.
//
//   auto model = Model::load("stories260K.gguf");   // maps weights, binds models/<arch>.json
// A Model is immutable and shared (std::shared_ptr) by every engine and session that runs it.
#pragma once

#include <memory>
#include <string>

#include "graph/graph.h"
#include "runtime/gguf.h"

namespace graphrun::graph {

class Model {
  public:
    // Opens and validates the model file, binds the graph to it and plans one token to check every shape;
    // throws GgufError/GraphError/PlanError. No graph_path: the shipped graph of the file's
    // general.architecture (graph_path_for).
    static std::shared_ptr<const Model> load(const std::string& model_path, const std::string& graph_path = "");
    const GgufFile& file() const { return *file_; }
    const Graph& graph() const { return graph_; }
    int64_t context_length() const { return context_length_; }  // what the model was trained for (0: unknown)

  private:
    std::shared_ptr<const GgufFile> file_;
    Graph graph_;
    int64_t context_length_ = 0;
};

}  // namespace graphrun::graph
