// graph/plan_dump.cpp — the plan as a person reads it (text) and as tools read it (JSON).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "graph/plan.h"

namespace graphrun::graph {

namespace {

std::string with_commas(int64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// "weight", "weight(q4_0x8)" for one repacked at load, "state", "intermediate@4096".
std::string where(const PlanTensor& t) {
    if (t.kind == PlanTensor::Kind::Weight && t.desc.layout)
        return std::string(plan_tensor_kind_name(t.kind)) + "(" + t.desc.layout + ")";
    if (t.kind == PlanTensor::Kind::Weight || t.kind == PlanTensor::Kind::State)
        return plan_tensor_kind_name(t.kind);
    return std::string(plan_tensor_kind_name(t.kind)) + "@" + std::to_string(t.offset);
}

// The nodes that write and read each state tensor (kv_write, attention), by state index.
struct StateUsers {
    std::vector<std::string> writers, readers;
};
std::vector<StateUsers> state_users(const Plan& plan, const Graph& graph) {
    std::vector<StateUsers> users(plan.state_tensors.size());
    for (const PlanStep& step : plan.steps)
        for (size_t i = 0; i < step.inputs.size(); ++i) {
            const PlanTensor& t = plan.tensors[size_t(step.inputs[i])];
            if (t.kind != PlanTensor::Kind::State) continue;
            auto& list = step.op->writes_state && i == 0 ? users[size_t(t.state)].writers
                                                         : users[size_t(t.state)].readers;
            list.push_back(graph.nodes[size_t(step.node)].name);
        }
    return users;
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out.empty() ? "-" : out;
}

// "stage 1 of 2 (rank 1): layers 4-7 of 8; receives blk.3.ffn_out from rank 0, 4,096 bytes per
// token; sends the logits' rows to rank 0; weights 72,351,744 of 144,519,168 bytes".
std::string stage_line(const GraphStage& st) {
    std::string out = "stage " + std::to_string(st.rank) + " of " + std::to_string(st.n_ranks) + " (rank " +
                      std::to_string(st.rank) + "): layers " + std::to_string(st.first_layer) + "-" +
                      std::to_string(st.last_layer) + " of " + std::to_string(st.n_layer);
    if (!st.receives.empty())
        out += "; receives " + st.receives + " from rank " + std::to_string(st.rank - 1) + ", " +
               with_commas(st.width_in * 4) + " bytes per token";
    if (!st.sends.empty())
        out += "; sends " + st.sends + " to rank " + std::to_string(st.rank + 1) + ", " +
               with_commas(st.width_out * 4) + " bytes per token";
    else if (st.rank > 0)
        out += "; sends the logits' rows to rank 0, " + with_commas(st.n_vocab * 4) + " bytes per row";
    return out + "; weights " + with_commas(st.weight_bytes) + " of " + with_commas(st.whole_weight_bytes) +
           " bytes";
}

// The path a step runs: the level of the kernel the plan binds (run.level_of(plan.simd), the level whose
// pointer run.at(plan.simd) is), null for a plain C++ row; and the row's variant of it on these inputs.
struct StepPath {
    const char* level = nullptr;    // "avx2"
    const char* variant = nullptr;  // "gemm"
};
StepPath step_path(const Plan& plan, const PlanStep& step) {
    const ops::OpDef& op = *step.op;
    StepPath path;
    if (!op.run.plain()) path.level = ops::simd_level_name(op.run.level_of(plan.simd));
    if (op.path_variant) {
        std::vector<ops::TensorDesc> inputs;
        for (int id : step.inputs) inputs.push_back(plan.tensors[size_t(id)].desc);
        path.variant = op.path_variant(inputs, plan.simd);
    }
    return path;
}

// "attention/avx2", "matmul_q4_0/avx2+gemm", or the plain name for kernels without instruction-set paths.
std::string kernel_label(const Plan& plan, const PlanStep& step) {
    const StepPath path = step_path(plan, step);
    std::string label = step.op->name;
    if (path.level) label += std::string("/") + path.level;
    if (path.variant) label += std::string("+") + path.variant;
    return label;
}

// "eps=1e-05 n_head=6": the attributes the graph set, in the op's declaration order.
std::string attributes_text(const GraphNode& node, const ops::OpDef& op) {
    std::string text;
    for (const ops::AttrDecl& decl : op.attrs) {
        if (std::find(node.attributes.begin(), node.attributes.end(), decl.name) == node.attributes.end())
            continue;
        text += (text.empty() ? "" : " ") + std::string(decl.name) + "=" +
                ops::attr_value_text(decl, node.params);
    }
    return text;
}

// s in a column `width` wide, or, when s is as wide or wider, s and one space: a column never runs into
// the next ("matmul_q4_0/avx512+gemm" is 23 characters).
std::string pad(std::string s, size_t width) {
    s.append(s.size() < width ? width - s.size() : 1, ' ');
    return s;
}

}  // namespace

std::string dump_plan_text(const Plan& plan, const Graph& graph) {
    std::string out = "plan of " + graph.source + " for " + std::to_string(plan.n_tokens) + " token(s), " +
                      std::to_string(plan.shape.n_outputs) +
                      " row(s) of logits: " + std::to_string(plan.steps.size()) + " steps\n";
    out += "symbols:";
    for (const auto& [name, value] : graph.symbols) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " %s=%g", name.c_str(), value);
        out += buf;
    }
    if (graph.stage) out += "\n" + stage_line(*graph.stage);
    // The outputs the graph declares and what this plan keeps of them.
    out += "\noutputs: " + std::string(graph.stage && !graph.stage->last() ? "sent = " : "logits = ") +
           graph.nodes[size_t(graph.outputs.at(0).index)].name;
    if (graph.embedding_output >= 0) {
        out +=
            "; embedding = " + graph.nodes[size_t(graph.outputs[size_t(graph.embedding_output)].index)].name;
        out += plan.embedding_tensor >= 0
                   ? " (kept: " + plan.tensors[size_t(plan.embedding_tensor)].desc.str() + ")"
                   : std::string(" (not kept by this plan; an embedding plan keeps it)");
    }
    out += "\nkernels run at: " + std::string(ops::simd_level_name(plan.simd)) +
           " (this CPU: " + ops::simd_level_name(ops::cpu_simd_level()) +
           "; GRAPHRUN_SIMD=scalar|avx2 caps it)\n";
    out += "\n" + pad("step", 6) + pad("kernel", 24) + pad("output", 22) + pad("dtype (shape)", 20) +
           pad("offset", 10) + pad("bytes", 11) + "inputs\n";
    for (size_t s = 0; s < plan.steps.size(); ++s) {
        const PlanStep& step = plan.steps[s];
        const PlanTensor& o = plan.tensors[step.output];
        const bool state = o.kind == PlanTensor::Kind::State;
        std::string line = pad(std::to_string(s), 6) + pad(kernel_label(plan, step), 24) + pad(o.name, 22) +
                           pad(o.desc.str(), 20) + pad(state ? "state" : std::to_string(o.offset), 10) +
                           pad(state ? "-" : with_commas(o.bytes), 11);
        for (size_t i = 0; i < step.inputs.size(); ++i) {
            const PlanTensor& in = plan.tensors[step.inputs[i]];
            line += (i ? ", " : "") + in.name + " " + in.desc.str() + " " + where(in);
        }
        if (step.scratch >= 0) {
            const PlanTensor& sc = plan.tensors[step.scratch];
            line += "; scratch " + with_commas(sc.bytes) + " bytes @" + std::to_string(sc.offset);
        }
        if (o.reuses >= 0) line += "; in place of " + plan.tensors[o.reuses].name;
        if (const std::string attrs = attributes_text(graph.nodes[step.node], *step.op); !attrs.empty())
            line += "; " + attrs;
        out += line + "\n";
    }
    const double ratio = plan.arena_bytes ? double(plan.naive_bytes) / double(plan.arena_bytes) : 0.0;
    char ratio_text[32];
    std::snprintf(ratio_text, sizeof ratio_text, "%.1fx", ratio);
    if (!plan.state_tensors.empty()) {
        const std::vector<StateUsers> users = state_users(plan, graph);
        out += "\nstate (the KV cache, kept between runs: " + std::to_string(plan.shape.kv_blocks) +
               " blocks of " + std::to_string(kKvBlockSize) + " positions, block tables of " +
               std::to_string(plan.shape.table_width) + " entries)\n";
        for (size_t i = 0; i < plan.state_tensors.size(); ++i) {
            const PlanTensor& t = plan.tensors[size_t(plan.state_tensors[i])];
            out += "  " + pad(t.name, 20) + pad(t.desc.str(), 22) + pad(with_commas(t.bytes) + " bytes", 18) +
                   "written by " + join(users[i].writers) + ", read by " + join(users[i].readers) + "\n";
        }
    }
    out += "\ntotals\n";
    out += "  arena peak       " + with_commas(plan.arena_bytes) + " bytes (naive sum of intermediates " +
           with_commas(plan.naive_bytes) + " bytes, " + ratio_text + " larger)\n";
    out += "  KV cache (state) " + with_commas(plan.state_bytes) + " bytes (" +
           std::to_string(plan.state_tensors.size()) + " tensors of " +
           std::to_string(plan.shape.kv_blocks * kKvBlockSize) + " positions, f16)\n";
    out += "  weights mapped   " + with_commas(plan.weight_bytes - plan.packed_weight_bytes) + " bytes\n";
    if (plan.packed_weight_bytes)
        out += "  weights repacked " + with_commas(plan.packed_weight_bytes) +
               " bytes (at load, for this level's GEMMs; the mapped pages released)\n";
    return out;
}

std::string dump_plan_json(const Plan& plan, const Graph& graph) {
    using Json = nlohmann::ordered_json;
    auto tensor_json = [&](int id) {
        const PlanTensor& t = plan.tensors[id];
        Json j = {{"name", t.name},
                  {"kind", plan_tensor_kind_name(t.kind)},
                  {"dtype", dtype_name(t.desc.dtype)},
                  {"shape", t.desc.shape},
                  {"bytes", t.bytes}};
        if (t.kind != PlanTensor::Kind::Weight && t.kind != PlanTensor::Kind::State) {
            j["offset"] = t.offset;
            j["lifetime"] = {t.first_step, t.last_step};
        }
        if (t.desc.layout) j["layout"] = t.desc.layout;
        if (t.reuses >= 0) j["in_place_of"] = plan.tensors[t.reuses].name;
        return j;
    };
    Json steps = Json::array();
    for (size_t s = 0; s < plan.steps.size(); ++s) {
        const PlanStep& step = plan.steps[s];
        Json inputs = Json::array();
        for (int id : step.inputs) inputs.push_back(tensor_json(id));
        Json j = {{"index", s},
                  {"node", graph.nodes[step.node].name},
                  {"op", graph.nodes[step.node].op},
                  {"kernel", step.op->name},
                  {"output", tensor_json(step.output)},
                  {"inputs", inputs}};
        if (step.scratch >= 0) j["scratch"] = tensor_json(step.scratch);
        const StepPath path = step_path(plan, step);
        if (path.level) j["simd"] = path.level;
        if (path.variant) j["path"] = path.variant;
        const GraphNode& node = graph.nodes[step.node];
        Json attributes = Json::object();
        for (const ops::AttrDecl& decl : step.op->attrs)
            if (std::find(node.attributes.begin(), node.attributes.end(), decl.name) != node.attributes.end())
                attributes[decl.name] = decl.kind == ops::AttrKind::Choice
                                            ? Json(ops::attr_value_text(decl, node.params))
                                            : Json(decl.get(node.params));
        j["attributes"] = attributes;
        steps.push_back(std::move(j));
    }
    Json state = Json::array();
    const std::vector<StateUsers> users = state_users(plan, graph);
    for (size_t i = 0; i < plan.state_tensors.size(); ++i) {
        Json j = tensor_json(plan.state_tensors[i]);
        j["written_by"] = users[i].writers;
        j["read_by"] = users[i].readers;
        state.push_back(std::move(j));
    }
    // The outputs the graph declares; the embedding output has a tensor only in plans that keep it.
    Json outputs = {{graph.stage && !graph.stage->last() ? "sent" : "logits",
                     {{"node", graph.nodes[size_t(graph.outputs.at(0).index)].name},
                      {"tensor", tensor_json(plan.output_tensors.at(0))}}}};
    if (graph.embedding_output >= 0) {
        Json e = {{"node", graph.nodes[size_t(graph.outputs[size_t(graph.embedding_output)].index)].name},
                  {"kept", plan.embedding_tensor >= 0}};
        if (plan.embedding_tensor >= 0) e["tensor"] = tensor_json(plan.embedding_tensor);
        outputs["embedding"] = std::move(e);
    }
    Json root = {{"graph", graph.source},
                 {"n_tokens", plan.n_tokens},
                 {"n_outputs", plan.shape.n_outputs},
                 {"symbols", graph.symbols},
                 {"outputs", outputs},
                 {"steps", steps},
                 {"state", state},
                 {"arena_bytes", plan.arena_bytes},
                 {"naive_bytes", plan.naive_bytes},
                 {"kv_cache_bytes", plan.state_bytes},
                 {"kv_cache",
                  {{"blocks", plan.shape.kv_blocks},
                   {"block_size", kKvBlockSize},
                   {"table_width", plan.shape.table_width},
                   {"tensors", plan.state_tensors.size()}}},
                 {"weight_bytes", plan.weight_bytes},
                 {"packed_weight_bytes", plan.packed_weight_bytes}};
    if (graph.stage) {
        const GraphStage& st = *graph.stage;
        root["stage"] = {{"rank", st.rank},
                         {"n_ranks", st.n_ranks},
                         {"layers", {st.first_layer, st.last_layer}},
                         {"n_layer", st.n_layer},
                         {"receives", st.receives},
                         {"receives_bytes_per_token", st.width_in * 4},
                         {"sends", st.sends},
                         {"sends_bytes_per_token", st.width_out * 4},
                         {"whole_weight_bytes", st.whole_weight_bytes}};
    }
    return root.dump(2) + "\n";
}

}  // namespace graphrun::graph
