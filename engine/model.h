// engine/model.h — a loaded model: the mapped GGUF file and the graph bound to it.
//
//   auto model = Model::load("stories260K.gguf");   // maps weights, binds models/<arch>.json
// A Model is immutable and shared (std::shared_ptr) by every engine and session that runs it.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <string>

#include "graph/graph.h"
#include "runtime/gguf.h"

namespace graphrun::graph {

class Pipeline;

class Model {
  public:
    // Opens and validates the model file, binds the graph to it and plans one token to check every shape;
    // throws GgufError/GraphError/PlanError. No graph_path: the shipped graph of the file's
    // general.architecture (graph_path_for). With a pipeline of more than one rank (engine/pipeline.h)
    // the graph is this rank's stage (graph/stages.h), and rank 0 has every other rank load it too.
    // Weights the CPU's GEMMs read faster in another layout are repacked (graph/repack.h; GRAPHRUN_REPACK=0
    // keeps every weight as stored).
    static std::shared_ptr<const Model> load(const std::string& model_path, const std::string& graph_path = "",
                                             Pipeline* pipeline = nullptr);
    ~Model();
    const GgufFile& file() const { return *file_; }
    const Graph& graph() const { return graph_; }
    int64_t context_length() const { return context_length_; }  // what the model was trained for (0: unknown)
    Pipeline* pipeline() const { return pipeline_; }  // nullptr: the whole graph, in this process
    int pipeline_id() const { return pipeline_id_; }
    // Over a pipeline: the graph before the cut and every rank's layers (graph/stages.h), so rank 0
    // can show every stage's plan. Alone: graph() and no ranges.
    const Graph& whole_graph() const { return whole_graph_ ? *whole_graph_ : graph_; }
    const std::vector<std::pair<int, int>>& stage_ranges() const { return stage_ranges_; }

  private:
    Pipeline* pipeline_ = nullptr;
    int pipeline_id_ = -1;
    std::shared_ptr<const GgufFile> file_;
    Graph graph_;
    std::optional<Graph> whole_graph_;
    std::vector<std::pair<int, int>> stage_ranges_;
    int64_t context_length_ = 0;
};

}  // namespace graphrun::graph
