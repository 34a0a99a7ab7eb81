// graph/planner.cpp — from a bound graph to a plan: kernels, shapes, lifetimes, planned state.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "graph/plan.h"
#include "ops/quant/traits.h"
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
        case PlanTensor::Kind::State:
            return "state";
    }
    return "?";
}

PlanShape plan_shape_for(int64_t n_tokens, int64_t n_outputs, int64_t n_ctx, int64_t n_seq) {
    if (n_ctx < 1 || n_ctx > kMaxContext)
        throw ops::PlanError("[plan] a context of " + std::to_string(n_ctx) + " positions is outside 1 .. " +
                             std::to_string(kMaxContext) + " (graph/limits.h)");
    if (n_seq < 1 || n_seq > kMaxSequences)
        throw ops::PlanError("[plan] " + std::to_string(n_seq) + " sequences is outside 1 .. " +
                             std::to_string(kMaxSequences));
    PlanShape shape;
    shape.n_tokens = n_tokens;
    shape.n_outputs = n_outputs;
    shape.table_width = (n_ctx + kKvBlockSize - 1) / kKvBlockSize;
    shape.kv_blocks = n_seq * shape.table_width;  // at most 2^12 * 2^20: no overflow
    return shape;
}

namespace {

int add_tensor(Plan& plan, PlanTensor tensor) {
    try {
        tensor.bytes = tensor.desc.nbytes();
    } catch (const SizeError& e) {  // a shape so large its byte count overflows
        throw ops::PlanError("[plan] tensor '" + tensor.name + "': " + e.what());
    }
    plan.tensors.push_back(std::move(tensor));
    return int(plan.tensors.size()) - 1;
}

void check_shape(const PlanShape& s) {
    auto range = [](const char* what, int64_t v, int64_t lo, int64_t hi) {
        if (v < lo || v > hi)
            throw ops::PlanError("[plan] " + std::string(what) + " " + std::to_string(v) + " is outside " +
                                 std::to_string(lo) + " .. " + std::to_string(hi));
    };
    if (s.n_tokens < 1) throw ops::PlanError("plan: a batch needs at least one token");
    if (s.n_tokens > kMaxBatch)
        throw ops::PlanError("plan: a batch of " + std::to_string(s.n_tokens) + " tokens is more than the " +
                             std::to_string(kMaxBatch) + " graphrun plans at once (graph/limits.h)");
    range("n_outputs (rows of logits)", s.n_outputs, 1, s.n_tokens);
    range("the block table width", s.table_width, 1, kMaxContext / kKvBlockSize);
    range("the KV pool's block count", s.kv_blocks, 1, kMaxKvBlocks);
}

// Who writes and reads each state tensor, for the errors that name two nodes.
struct StateUse {
    int writer = -1;  // node index
    int reader = -1;
};

// The state rules, checked for each node before its op infers anything: state goes exactly where an
// op declares it (attention without a cache fails here, naming the node), each KV cache has one
// writer and one reader, and it is written before it is read.
void check_state_inputs(const Plan& plan, const Graph& graph, const PlanStep& step, const ops::NodeInfo& info,
                        std::vector<StateUse>& use) {
    const ops::OpDef& op = *step.op;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
        const PlanTensor& t = plan.tensors[step.inputs[i]];
        const bool is_state = t.kind == PlanTensor::Kind::State;
        const bool wants_state = (op.state_inputs >> i) & 1u;
        const std::string input = "input " + std::to_string(i);
        if (wants_state && !is_state)
            throw ops::PlanError(info, input +
                                           " must be a KV cache (a state the graph declares, written by a "
                                           "kv_write node), got '" +
                                           t.name + "' (" + plan_tensor_kind_name(t.kind) + ")");
        if (!wants_state && is_state)
            throw ops::PlanError(info, input + " is the KV cache '" + t.name + "', but op '" + info.op +
                                           "' takes no state there (only kv_write and attention use caches)");
        if (!is_state) continue;
        for (size_t j = 0; j < i; ++j)
            if (step.inputs[j] == step.inputs[i])
                throw ops::PlanError(info, "takes the KV cache '" + t.name + "' as input " +
                                               std::to_string(j) + " and as " + input +
                                               " (keys and values need a cache each)");
        StateUse& u = use[size_t(t.state)];
        if (op.writes_state && i == 0) {
            if (u.writer >= 0)
                throw ops::PlanError(info, "writes the KV cache '" + t.name + "', which node '" +
                                               graph.nodes[size_t(u.writer)].name +
                                               "' writes too: each layer needs caches of its own");
            u.writer = step.node;
            continue;
        }
        if (u.writer < 0)
            throw ops::PlanError(info, "reads the KV cache '" + t.name +
                                           "' before any node writes it (store the batch's keys or values "
                                           "with kv_write first)");
        if (u.reader >= 0 && u.reader != step.node)
            throw ops::PlanError(info, "reads the KV cache '" + t.name + "', which node '" +
                                           graph.nodes[size_t(u.reader)].name +
                                           "' reads too: two attention nodes would share one layer's cache");
        u.reader = step.node;
    }
}

// The session reads the first output as the logits: one row of n_vocab floats per row it asked for.
// A graph whose first output has another shape is refused here, before anything reads past it.
void check_logits(const Plan& plan, const Graph& graph) {
    const PlanTensor& t = plan.tensors[size_t(plan.output_tensors.at(0))];
    if (graph.stage && !graph.stage->last()) {  // its one output is what it sends: (n_tokens, width)
        if (t.desc.dtype == DType::F32 && t.desc.shape.size() == 2 && t.desc.shape[0] == plan.n_tokens)
            return;
        throw ops::PlanError("[plan] stage " + std::to_string(graph.stage->rank) + " sends " + t.desc.str() +
                             "; a stage sends f32 (n_tokens, width)");
    }
    const bool selects = graph.input(InputKind::LogitRows) != nullptr;
    const int64_t rows = plan.shape.n_outputs;
    if (t.desc.dtype == DType::F32 && t.desc.shape.size() == 2 && t.desc.shape[0] == rows) return;
    throw ops::PlanError("[plan] output '" + graph.nodes[size_t(graph.outputs[0].index)].name + "' is " +
                         t.desc.str() + ", but the session reads the first output as the logits, f32 (" +
                         (selects ? "n_outputs " : "n_tokens ") + std::to_string(rows) + ", n_vocab): " +
                         (selects ? "one row per entry of logit_rows" : "one row per token of the batch"));
}

// Chooses the node's kernel and infers its output. A PlanError gets the node's context appended, so a
// shape that a metadata key or a weight got wrong names that key or weight.
// `check_state` runs once the kernel is known and before it infers, so a misplaced KV cache is
// reported as such rather than as the shape error it would cause.
ops::TensorDesc infer_node(const GraphNode& node, const ops::NodeInfo& info, const ops::OpDef*& kernel,
                           const std::function<void()>& check_state) {
    try {
        kernel = &ops::choose_kernel(info);
        const int n = int(info.inputs.size()), min = kernel->n_inputs, max = min + kernel->n_optional_inputs;
        if (n < min || n > max)
            throw ops::PlanError(
                info, "expects " + std::to_string(min) +
                          (max == min ? "" : (max == min + 1 ? " or " : " to ") + std::to_string(max)) +
                          " inputs, got " + std::to_string(n));
        check_state();
        return kernel->infer(info);
    } catch (const ops::PlanError& e) {
        if (node.context.empty()) throw;
        std::string context;
        for (const std::string& c : node.context) context += (context.empty() ? "" : "; ") + c;
        throw ops::PlanError(std::string(e.what()) + "; " + context);
    }
}

// The plan for `requested` before any tensor: the shape (n_outputs is every token when the graph
// selects no logit rows) checked against the limits.
Plan start_plan(const Graph& graph, const PlanShape& requested, ops::SimdLevel simd) {
    if (!ops::simd_level_available(simd))
        throw std::invalid_argument(std::string("make_plan: this CPU has no ") + ops::simd_level_name(simd) +
                                    " kernels");
    PlanShape shape = requested;
    if (!graph.input(InputKind::LogitRows)) shape.n_outputs = shape.n_tokens;  // logits for every token
    check_shape(shape);
    Plan plan;
    plan.shape = shape;
    plan.simd = simd;
    plan.n_tokens = shape.n_tokens;
    return plan;
}

// Graph inputs, written by the session before every run.
void add_input_tensors(Plan& plan, const Graph& graph) {
    const PlanShape& shape = plan.shape;
    for (const GraphInput& input : graph.inputs) {
        std::vector<int64_t> dims = {shape.n_tokens};
        if (input.kind == InputKind::KvTable) dims = {shape.n_tokens, shape.table_width};
        if (input.kind == InputKind::LogitRows) dims = {shape.n_outputs};
        const DType dtype = input.kind == InputKind::StageIn ? DType::F32 : DType::I32;
        if (input.kind == InputKind::StageIn) dims = {shape.n_tokens, input.width};
        plan.input_tensors.push_back(add_tensor(plan, {input.name, {dtype, dims}, PlanTensor::Kind::Input}));
    }
}

// State: each KV cache holds every block of the pool. Sizes are bounded by check_shape and
// kMaxStateWidth, so no product here can overflow: 2^26 rows * 2^20 * 2 bytes < 2^63.
void add_state_tensors(Plan& plan, const Graph& graph) {
    for (size_t i = 0; i < graph.states.size(); ++i) {
        PlanTensor t{graph.states[i].name,
                     {DType::F16, {plan.shape.kv_blocks * kKvBlockSize, graph.states[i].width}},
                     PlanTensor::Kind::State};
        t.state = int(i);
        plan.state_tensors.push_back(add_tensor(plan, std::move(t)));
        plan.state_bytes += plan.tensors.back().bytes;
    }
}

// The plan tensor behind each value a node reads; a weight becomes one when a node first reads it.
struct ValueTensors {
    std::vector<int> weight;  // by graph weight index, -1 until read
    std::vector<int> node;    // by node index: what its step writes
    std::vector<StateUse> state_use;
};

int tensor_of(Plan& plan, const Graph& graph, ValueTensors& values, const ValueRef& ref) {
    switch (ref.kind) {
        case ValueRef::Kind::Input:
            return plan.input_tensors[ref.index];
        case ValueRef::Kind::Node:
            return values.node[ref.index];
        case ValueRef::Kind::State:
            return plan.state_tensors[ref.index];
        case ValueRef::Kind::Weight:
            break;
    }
    int& id = values.weight[ref.index];
    if (id < 0) {
        const GraphWeight& gw = graph.weights[ref.index];
        const GgufTensor& w = *gw.tensor;
        PlanTensor t{w.name, {w.type, w.shape()}, PlanTensor::Kind::Weight};
        t.weight_data = w.data;
        // Repacked at load: read where this plan's level has the GEMM of the layout, else as stored.
        const ops::QuantTraits* tr = gw.packed ? ops::quant_traits_at(w.type, plan.simd) : nullptr;
        if (tr && tr->packed_gemm) {
            t.weight_data = gw.packed->data();
            t.desc.layout = tr->packed_layout;
            plan.packed_weight_bytes =
                checked_add(plan.packed_weight_bytes, int64_t(w.nbytes), "weight bytes");
        }
        id = add_tensor(plan, std::move(t));
        plan.weight_bytes = checked_add(plan.weight_bytes, int64_t(w.nbytes), "weight bytes");
    }
    return id;
}

// One node's step: its inputs, the kernel chosen and the output inferred (the state itself for an op
// that updates its cache in place), its scratch, and the lifetimes of its inputs extended to it.
void add_node_step(Plan& plan, const Graph& graph, size_t n, ValueTensors& values) {
    const GraphNode& node = graph.nodes[n];
    ops::NodeInfo info{node.name, node.op, {}, node.params, {}};
    PlanStep step;
    step.node = int(n);
    step.params = node.params;
    for (const ValueRef& ref : node.inputs) {
        step.inputs.push_back(tensor_of(plan, graph, values, ref));
        info.inputs.push_back(plan.tensors[step.inputs.back()].desc);
        info.input_names.push_back(plan.tensors[step.inputs.back()].name);
    }
    const int step_index = int(plan.steps.size());
    const ops::TensorDesc out_desc = infer_node(
        node, info, step.op, [&] { check_state_inputs(plan, graph, step, info, values.state_use); });
    for (size_t i = 0; i < info.inputs.size(); ++i)
        if (info.inputs[i].layout && step.op->packed_input != int(i))
            throw std::logic_error("plan: node '" + node.name + "' reads " + info.input_names[i] + " (" +
                                   info.inputs[i].layout + ") as input " + std::to_string(i) + ", which " +
                                   step.op->name + " reads as stored");
    if (step.op->writes_state) {
        step.output = values.node[n] = step.inputs[0];  // the state itself, updated in place
    } else {
        PlanTensor out{node.name, out_desc, PlanTensor::Kind::Intermediate};
        out.first_step = out.last_step = step_index;
        step.output = values.node[n] = add_tensor(plan, std::move(out));
    }
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

// A step per node, each node's kernel chosen and its output inferred. Nodes are bound in definition
// order and refer only to earlier ones: that order is topological. Returns the tensor of each node.
std::vector<int> add_node_steps(Plan& plan, const Graph& graph) {
    ValueTensors values{std::vector<int>(graph.weights.size(), -1), std::vector<int>(graph.nodes.size(), -1),
                        std::vector<StateUse>(graph.states.size())};
    for (size_t n = 0; n < graph.nodes.size(); ++n) add_node_step(plan, graph, n, values);
    for (size_t i = 0; i < graph.states.size(); ++i)
        if (values.state_use[i].writer < 0)
            throw ops::PlanError("[plan] state '" + graph.states[i].name +
                                 "' is declared but no node writes it (a kv_write node stores each layer's "
                                 "keys or values)");
    return std::move(values.node);
}

// The embedding output is read as one row of hidden state per row of logits: (n_outputs, n_embd) f32.
void check_embedding(const Plan& plan, const Graph& graph) {
    if (!plan.shape.embedding) return;
    if (graph.embedding_output < 0)
        throw ops::PlanError(
            "[plan] " + graph.source +
            " declares no embedding output (\"outputs\": {\"logits\": ..., \"embedding\": ...})");
    const PlanTensor& t = plan.tensors[size_t(plan.embedding_tensor)];
    if (t.desc.dtype == DType::F32 && t.desc.shape.size() == 2 && t.desc.shape[0] == plan.shape.n_outputs)
        return;
    throw ops::PlanError("[plan] output 'embedding' ('" +
                         graph.nodes[size_t(graph.outputs[size_t(graph.embedding_output)].index)].name +
                         "') is " + t.desc.str() + ", but it is read as f32 (" +
                         std::to_string(plan.shape.n_outputs) + ", n_embd): one row per row of logits");
}

// Outputs stay alive to the end: the session reads them after the run. The embedding output only
// when the shape asks for it: other plans let its bytes be reused as any intermediate's.
void keep_outputs_alive(Plan& plan, const Graph& graph, const std::vector<int>& node_tensor) {
    const int end = int(plan.steps.size());
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
        const ValueRef& ref = graph.outputs[i];
        const bool embedding = int(i) == graph.embedding_output;
        if (embedding && !plan.shape.embedding) {
            plan.output_tensors.push_back(-1);
            continue;
        }
        const int id = node_tensor[ref.index];
        if (embedding) plan.embedding_tensor = id;
        if (plan.tensors[id].kind == PlanTensor::Kind::State)
            throw ops::PlanError("[plan] output '" + graph.nodes[ref.index].name +
                                 "' is a KV cache; outputs are computed tensors");
        plan.tensors[id].last_step = end;
        plan.output_tensors.push_back(id);
    }
    check_logits(plan, graph);
    check_embedding(plan, graph);
}

// In-place: an op that allows it writes over input 0 when that input dies at this very step.
void reuse_dying_inputs(Plan& plan) {
    for (int s = 0; s < int(plan.steps.size()); ++s) {
        PlanStep& step = plan.steps[s];
        if (!step.op->in_place || step.inputs.empty()) continue;
        const PlanTensor& in = plan.tensors[step.inputs[0]];
        PlanTensor& out = plan.tensors[step.output];
        if (in.kind == PlanTensor::Kind::Intermediate && in.last_step == s && in.bytes == out.bytes)
            out.reuses = step.inputs[0];
    }
}

// Arena placement: offsets for every tensor that is neither a weight nor state, and the bytes they
// would take without reuse (the dump compares the two).
void place_in_arena(Plan& plan) {
    for (const PlanTensor& t : plan.tensors)
        if (t.kind != PlanTensor::Kind::Weight && t.kind != PlanTensor::Kind::State)
            plan.naive_bytes = checked_add(plan.naive_bytes, t.bytes, "[plan] arena bytes");
    assign_arena_offsets(plan);
}

}  // namespace

// The phases of docs/architecture.md ("graph/: from JSON to a plan"), in order.
Plan make_plan(const Graph& graph, const PlanShape& requested, ops::SimdLevel simd) {
    Plan plan = start_plan(graph, requested, simd);
    add_input_tensors(plan, graph);
    add_state_tensors(plan, graph);
    const std::vector<int> node_tensor = add_node_steps(plan, graph);  // kernel choice and inference
    keep_outputs_alive(plan, graph, node_tensor);                      // lifetimes end at the last read
    reuse_dying_inputs(plan);
    place_in_arena(plan);
    verify_plan(plan);
    return plan;
}

std::vector<Step> bind_plan(const Plan& plan, uint8_t* arena, const std::vector<void*>& state) {
    if (state.size() != plan.state_tensors.size())
        throw std::logic_error("bind_plan: " + std::to_string(state.size()) + " state buffers for " +
                               std::to_string(plan.state_tensors.size()) + " state tensors");
    auto ref = [&](int id) {
        const PlanTensor& t = plan.tensors[id];
        TensorRef r;
        r.dtype = t.desc.dtype;
        r.rank = int(t.desc.shape.size());
        r.packed = t.desc.layout != nullptr;
        for (int i = 0; i < r.rank; ++i) r.shape[i] = t.desc.shape[i];
        switch (t.kind) {
            case PlanTensor::Kind::Weight:
                r.data = const_cast<void*>(t.weight_data);
                break;
            case PlanTensor::Kind::State:
                r.data = state[size_t(t.state)];
                break;
            default:
                r.data = arena + t.offset;
        }
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
        step.run = ps.op->run.at(plan.simd);
        step.run_items = ps.op->work_items(args);
        step.grain = ps.op->grain;
        step.prepare = ps.op->prepare.at(plan.simd);
        step.prepare_items = ps.op->prepare_items ? ps.op->prepare_items(args) : 0;
        steps.push_back(std::move(step));
    }
    return steps;
}

}  // namespace graphrun::graph
