// engine/model.cpp — loading a model: map the file, bind the graph, check the inputs a session needs.
#include "engine/model.h"

#include <algorithm>

#include "graph/plan.h"

namespace graphrun::graph {

std::shared_ptr<const Model> Model::load(const std::string& model_path, const std::string& graph_path) {
    std::shared_ptr<Model> model(new Model());
    model->file_ = GgufFile::open(model_path);
    const std::string arch = model->file_->find_string("general.architecture").value_or("");
    std::string graph_file = graph_path;
    if (graph_file.empty()) {
        try {
            graph_file = graph_path_for(arch);
        } catch (const GraphError& e) {
            throw GraphError(model_path + ": general.architecture is '" + arch + "': " + e.what());
        }
    }
    model->graph_ = bind_graph(load_graph_file(graph_file), *model->file_);
    const Graph& g = model->graph_;
    for (InputKind kind : {InputKind::Tokens, InputKind::Positions})
        if (!g.input(kind))
            throw GraphError(graph_file + ": inputs: a generation graph must declare '" +
                             std::string(kind == InputKind::Tokens ? "tokens" : "positions") + "'");
    make_plan(g, 1, 1);  // every shape checked now, while loading, not at the first token
    model->context_length_ = model->file_->find_int(arch + ".context_length").value_or(0);
    return model;
}

}  // namespace graphrun::graph
