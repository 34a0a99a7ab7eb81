// engine/model.cpp — loading a model: map the file, bind the graph, check the inputs a session needs,
// repack the weights the CPU's GEMMs read fastest in another layout (graph/repack.h).
#include "engine/model.h"

#include <algorithm>

#include "engine/pipeline.h"
#include "graph/plan.h"
#include "graph/repack.h"
#include "graph/stages.h"

namespace graphrun::graph {

std::shared_ptr<const Model> Model::load(const std::string& model_path, const std::string& graph_path,
                                         Pipeline* pipeline) {
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
    if (pipeline && pipeline->n_ranks() > 1) {
        // The whole graph loaded on rank 0 first, so a bad file or graph is its one clear error; then
        // every rank loads its stage.
        model->whole_graph_ = model->graph_;
        model->stage_ranges_ = graph::stage_ranges(g, pipeline->n_ranks(), pipeline->stages());
        model->graph_ = cut_stage(*model->whole_graph_, model->stage_ranges_, pipeline->rank());
        make_plan(model->graph_, 1, 1);
        pipeline->set_stage(*model->graph_.stage);
        model->pipeline_ = pipeline;
        model->pipeline_id_ = pipeline->next_model_id();
        if (pipeline->leads())
            pipeline->tell(PipelineMessage()
                               .put(int64_t(PipelineCommand::LoadModel))
                               .put(model->pipeline_id_)
                               .put(model_path)
                               .put(graph_path));
    }
    if (repack_enabled()) repack_weights(model->graph_, *model->file_);  // this rank's weights only
    model->context_length_ = model->file_->find_int(arch + ".context_length").value_or(0);
    return model;
}

Model::~Model() {
    try {
        if (pipeline_ && pipeline_->leads())
            pipeline_->tell(PipelineMessage().put(int64_t(PipelineCommand::DropModel)).put(pipeline_id_));
    } catch (const StageLinkError&) {  // a rank already gone
    }
}

}  // namespace graphrun::graph
