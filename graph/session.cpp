// graph/session.cpp — loading a model, planning per batch size, running tokens.
#include "graph/session.h"

#include <algorithm>
#include <cstring>

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
    for (const char* name : {"tokens", "positions"}) {
        const bool declared = std::any_of(g.inputs.begin(), g.inputs.end(),
                                          [&](const GraphInput& in) { return in.name == name; });
        if (!declared) throw GraphError(graph_file + ": inputs: a generation graph must declare '" + name + "'");
    }
    make_plan(g, 1, 1);  // every shape checked now, while loading, not at the first token
    model->context_length_ = model->file_->find_int(arch + ".context_length").value_or(0);
    return model;
}

Session::Session(std::shared_ptr<const Model> model, SessionOptions options)
    : model_(std::move(model)), options_(options), executor_(options.n_threads) {
    if (options_.max_batch < 1) throw std::invalid_argument("max_batch must be at least 1");
    n_ctx_ = options_.n_ctx > 0 ? options_.n_ctx
                                : std::min<int64_t>(model_->context_length() > 0 ? model_->context_length() : 2048, 2048);
    // The one-token plan tells the KV cache's size and the vocabulary (the logits' width).
    const Plan& first = bound(1).plan;
    const ops::TensorDesc& logits = first.tensors[first.output_tensors.at(0)].desc;
    if (logits.dtype != DType::F32 || logits.shape.size() != 2)
        throw GraphError(model_->graph().source + ": outputs: the first output must be f32 (n_tokens, n_vocab), is " +
                         logits.str());
    n_vocab_ = logits.shape[1];
}

Session::BoundPlan& Session::bound(int64_t n_tokens) {
    auto it = plans_.find(n_tokens);
    if (it != plans_.end()) return *it->second;
    auto entry = std::make_unique<BoundPlan>();
    entry->plan = make_plan(model_->graph(), n_tokens, n_ctx_);
    const KvCacheSpec& kv = entry->plan.kv;
    if (kv_.n_layer() != kv.n_layer || kv_.row() != kv.row || kv_.n_ctx() != kv.n_ctx) {
        if (!plans_.empty()) throw ops::PlanError("[plan] the KV cache shape changed between batch sizes");
        kv_ = KvCache(kv.n_layer, kv.n_ctx, kv.row);
    }
    if (entry->plan.arena_bytes > arena_.size()) {
        // A bigger batch needs a bigger arena: every cached plan is bound again to the new one.
        arena_ = AlignedBuffer(entry->plan.arena_bytes, kArenaAlignment);
        for (auto& [n, other] : plans_) other->steps = bind_plan(other->plan, arena_.data(), kv_);
    }
    entry->steps = bind_plan(entry->plan, arena_.data(), kv_);
    return *plans_.emplace(n_tokens, std::move(entry)).first->second;
}

std::span<const float> Session::eval(std::span<const int32_t> tokens) {
    if (tokens.empty()) throw std::invalid_argument("eval: no tokens");
    if (n_past_ + int64_t(tokens.size()) > n_ctx_)
        throw std::runtime_error("context is full: " + std::to_string(n_past_) + " positions used, " +
                                 std::to_string(tokens.size()) + " more do not fit in " + std::to_string(n_ctx_) +
                                 " (raise -c)");
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab_)
            throw std::out_of_range("token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                                    ", outside the vocabulary of " + std::to_string(n_vocab_));
    if (int64_t(tokens.size()) <= options_.max_batch) return eval_chunk(tokens);

    chunked_logits_.resize(tokens.size() * size_t(n_vocab_));
    for (size_t start = 0; start < tokens.size(); start += size_t(options_.max_batch)) {
        const size_t n = std::min(tokens.size() - start, size_t(options_.max_batch));
        std::span<const float> part = eval_chunk(tokens.subspan(start, n));
        std::copy(part.begin(), part.end(), chunked_logits_.begin() + std::ptrdiff_t(start * size_t(n_vocab_)));
    }
    return chunked_logits_;
}

std::span<const float> Session::eval_chunk(std::span<const int32_t> tokens) {
    const int64_t n = int64_t(tokens.size());
    BoundPlan& bp = bound(n);
    const Graph& g = model_->graph();
    for (size_t i = 0; i < g.inputs.size(); ++i) {
        auto* dst = reinterpret_cast<int32_t*>(arena_.data() + bp.plan.tensors[bp.plan.input_tensors[i]].offset);
        if (g.inputs[i].name == "tokens") std::memcpy(dst, tokens.data(), size_t(n) * sizeof(int32_t));
        if (g.inputs[i].name == "positions")
            for (int64_t t = 0; t < n; ++t) dst[t] = int32_t(n_past_ + t);
    }
    executor_.run(bp.steps);
    n_past_ += n;
    const PlanTensor& logits = bp.plan.tensors[bp.plan.output_tensors[0]];
    return {reinterpret_cast<const float*>(arena_.data() + logits.offset), size_t(n * n_vocab_)};
}

}  // namespace graphrun::graph
