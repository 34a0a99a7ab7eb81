// graph/planner.cpp — from a bound graph to a plan: kernels, shapes, lifetimes, KV cache.
#include <algorithm>

#include "graph/limits.h"
#include "graph/plan.h"
#include "ops/attention.h"
#include "runtime/checked_math.h"

namespace graphrun::graph {

const char* plan_tensor_kind_name(PlanTensor::Kind kind) {
    switch (kind) {
        case PlanTensor::Kind::Input:
            return "input";
        case PlanTensor::Kind::Weight:
            return "weight";
        case PlanTensor::Kind::Intermediate:
            return "arena";
        case PlanTensor::Kind::Scratch:
            return "scratch";
    }
    return "?";
}

namespace {

int add_tensor(Plan& plan, PlanTensor tensor) {
    try {
        tensor.bytes = tensor.desc.nbytes();
    } catch (const SizeError& e) {  // a batch or a shape so large its byte count overflows
        throw ops::PlanError("[plan] tensor '" + tensor.name + "': " + e.what());
    }
    plan.tensors.push_back(std::move(tensor));
    return int(plan.tensors.size()) - 1;
}

// The KV cache the attention steps need: one layer per attention step, rows of n_head_kv*head_dim.
// Each step's `layer` must be its own and below the number of attention steps: two steps on one
// layer would overwrite each other's keys, and a sparse index ("layer": 1000000) would size the
// cache for layers that do not exist.
KvCacheSpec kv_cache_spec(const Plan& plan, const Graph& graph, int64_t n_ctx) {
    KvCacheSpec kv;
    kv.n_ctx = n_ctx;
    int64_t n_attention = 0;
    for (const PlanStep& step : plan.steps) n_attention += step.params.holds<ops::AttentionParams>();
    std::vector<int> owner(size_t(n_attention), -1);  // the step holding each layer
    for (const PlanStep& step : plan.steps) {
        if (!step.params.holds<ops::AttentionParams>()) continue;
        const ops::AttentionParams p = step.params.get<ops::AttentionParams>();
        const int64_t row = int64_t(p.n_head_kv) * p.head_dim;
        const ops::NodeInfo info{graph.nodes[step.node].name, graph.nodes[step.node].op, {}, step.params, {}};
        if (p.layer < 0 || p.layer >= n_attention)
            throw ops::PlanError(info, "attribute 'layer' is " + std::to_string(p.layer) + ", but the graph has " +
                                           std::to_string(n_attention) + " attention nodes: number their layers 0 .. " +
                                           std::to_string(n_attention - 1) + ", one each");
        if (owner[size_t(p.layer)] >= 0)
            throw ops::PlanError(info, "attribute 'layer' is " + std::to_string(p.layer) + ", which node '" +
                                           graph.nodes[size_t(owner[size_t(p.layer)])].name +
                                           "' already uses: each attention node needs a KV cache layer of its own");
        owner[size_t(p.layer)] = step.node;
        if (kv.row != 0 && row != kv.row)
            throw ops::PlanError(info, "KV rows of " + std::to_string(row) + " floats, other layers use " +
                                           std::to_string(kv.row));
        kv.row = row;
        kv.n_layer = std::max<int64_t>(kv.n_layer, int64_t(p.layer) + 1);
    }
    try {
        (void)kv.bytes();  // checked: -c (n_ctx) comes from the command line
    } catch (const SizeError& e) {
        throw ops::PlanError("[plan] KV cache of " + std::to_string(kv.n_layer) + " layers x " +
                             std::to_string(n_ctx) + " positions x " + std::to_string(kv.row) + ": " + e.what());
    }
    return kv;
}

// Chooses the node's kernel and infers its output. A PlanError gets the node's context appended, so a
// shape that a metadata key or a weight got wrong names that key or weight.
ops::TensorDesc infer_node(const GraphNode& node, const ops::NodeInfo& info, const ops::OpDef*& kernel) {
    try {
        kernel = &ops::choose_kernel(info);
        const int n = int(info.inputs.size()), min = kernel->n_inputs, max = min + kernel->n_optional_inputs;
        if (n < min || n > max)
            throw ops::PlanError(info, "expects " + std::to_string(min) +
                                           (max == min ? "" : (max == min + 1 ? " or " : " to ") + std::to_string(max)) +
                                           " inputs, got " +
                                           std::to_string(n));
        return kernel->infer(info);
    } catch (const ops::PlanError& e) {
        if (node.context.empty()) throw;
        std::string context;
        for (const std::string& c : node.context) context += (context.empty() ? "" : "; ") + c;
        throw ops::PlanError(std::string(e.what()) + "; " + context);
    }
}

}  // namespace

Plan make_plan(const Graph& graph, int64_t n_tokens, int64_t n_ctx) {
    if (n_tokens < 1) throw ops::PlanError("plan: a batch needs at least one token");
    if (n_tokens > kMaxBatch)
        throw ops::PlanError("plan: a batch of " + std::to_string(n_tokens) + " tokens is more than the " +
                             std::to_string(kMaxBatch) + " graphrun plans at once (graph/limits.h)");
    if (n_ctx < 0 || n_ctx > kMaxContext)
        throw ops::PlanError("plan: a context of " + std::to_string(n_ctx) + " positions is outside 0.." +
                             std::to_string(kMaxContext) + " (graph/limits.h)");
    Plan plan;
    plan.n_tokens = n_tokens;

    // Graph inputs: (n_tokens) i32 each, written by the session before every run.
    for (const GraphInput& input : graph.inputs) {
        plan.input_tensors.push_back(
            add_tensor(plan, {input.name, {DType::I32, {n_tokens}}, PlanTensor::Kind::Input}));
    }
    std::vector<int> weight_tensor(graph.weights.size(), -1);
    std::vector<int> node_tensor(graph.nodes.size(), -1);

    auto tensor_of = [&](const ValueRef& ref) {
        switch (ref.kind) {
            case ValueRef::Kind::Input:
                return plan.input_tensors[ref.index];
            case ValueRef::Kind::Node:
                return node_tensor[ref.index];
            case ValueRef::Kind::Weight:
                break;
        }
        int& id = weight_tensor[ref.index];
        if (id < 0) {
            const GgufTensor& w = *graph.weights[ref.index].tensor;
            PlanTensor t{w.name, {w.type, w.shape()}, PlanTensor::Kind::Weight};
            t.weight_data = w.data;
            id = add_tensor(plan, std::move(t));
            plan.weight_bytes = checked_add(plan.weight_bytes, int64_t(w.nbytes), "weight bytes");
        }
        return id;
    };

    // Nodes are bound in definition order and refer only to earlier ones: that order is topological.
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
        const GraphNode& node = graph.nodes[n];
        ops::NodeInfo info{node.name, node.op, {}, node.params, {}};
        PlanStep step;
        step.node = int(n);
        step.params = node.params;
        for (const ValueRef& ref : node.inputs) {
            step.inputs.push_back(tensor_of(ref));
            info.inputs.push_back(plan.tensors[step.inputs.back()].desc);
            info.input_names.push_back(plan.tensors[step.inputs.back()].name);
        }
        const int step_index = int(plan.steps.size());
        PlanTensor out{node.name, infer_node(node, info, step.op), PlanTensor::Kind::Intermediate};
        out.first_step = out.last_step = step_index;
        step.output = node_tensor[n] = add_tensor(plan, std::move(out));
        if (step.op->scratch_bytes) {
            const int64_t bytes = step.op->scratch_bytes(info);
            if (bytes > 0) {
                PlanTensor scratch{node.name + ".scratch", {DType::I32, {}}, PlanTensor::Kind::Scratch};
                scratch.first_step = scratch.last_step = step_index;
                step.scratch = add_tensor(plan, std::move(scratch));
                plan.tensors[step.scratch].bytes = bytes;
                plan.tensors[step.scratch].desc = {DType::F32, {}};  // raw bytes; the dump shows the size
            }
        }
        for (int input : step.inputs) {
            PlanTensor& t = plan.tensors[input];
            t.last_step = std::max(t.last_step, step_index);
        }
        plan.steps.push_back(std::move(step));
    }

    // Outputs stay alive to the end: the session reads them after the run.
    const int end = int(plan.steps.size());
    for (const ValueRef& ref : graph.outputs) {
        const int id = node_tensor[ref.index];
        plan.tensors[id].last_step = end;
        plan.output_tensors.push_back(id);
    }

    // In-place: an op that allows it writes over input 0 when that input dies at this very step.
    for (int s = 0; s < end; ++s) {
        PlanStep& step = plan.steps[s];
        if (!step.op->in_place || step.inputs.empty()) continue;
        const PlanTensor& in = plan.tensors[step.inputs[0]];
        PlanTensor& out = plan.tensors[step.output];
        if (in.kind == PlanTensor::Kind::Intermediate && in.last_step == s && in.bytes == out.bytes)
            out.reuses = step.inputs[0];
    }

    for (const PlanTensor& t : plan.tensors)
        if (t.kind != PlanTensor::Kind::Weight) plan.naive_bytes = checked_add(plan.naive_bytes, t.bytes, "[plan] arena bytes");
    plan.kv = kv_cache_spec(plan, graph, n_ctx);
    assign_arena_offsets(plan);
    verify_plan(plan);
    return plan;
}

std::vector<Step> bind_plan(const Plan& plan, uint8_t* arena, KvCache& kv) {
    auto ref = [&](int id) {
        const PlanTensor& t = plan.tensors[id];
        TensorRef r;
        r.dtype = t.desc.dtype;
        r.rank = int(t.desc.shape.size());
        for (int i = 0; i < r.rank; ++i) r.shape[i] = t.desc.shape[i];
        r.data = t.kind == PlanTensor::Kind::Weight ? const_cast<void*>(t.weight_data) : arena + t.offset;
        return r;
    };
    std::vector<Step> steps;
    steps.reserve(plan.steps.size());
    for (const PlanStep& ps : plan.steps) {
        Step step;
        step.node = plan.tensors[ps.output].name;
        step.kernel = ps.op->name;
        step.flops = ps.op->flops;
        step.label = step.node + " (" + ps.op->name + ")";
        KernelArgs& args = step.args;
        args.n_in = int(ps.inputs.size());
        for (int i = 0; i < args.n_in; ++i) args.in[i] = ref(ps.inputs[i]);
        args.out = ref(ps.output);
        args.params = ps.params;
        if (ps.scratch >= 0) {
            args.scratch = arena + plan.tensors[ps.scratch].offset;
            args.scratch_bytes = plan.tensors[ps.scratch].bytes;
        }
        if (ps.params.holds<ops::AttentionParams>())
            args.kv = kv.layer(ps.params.get<ops::AttentionParams>().layer);
        step.run = ps.op->run;
        step.run_items = ps.op->work_items(args);
        step.grain = ps.op->grain;
        step.prepare = ps.op->prepare;
        step.prepare_items = ps.op->prepare_items ? ps.op->prepare_items(args) : 0;
        steps.push_back(std::move(step));
    }
    return steps;
}

}  // namespace graphrun::graph
