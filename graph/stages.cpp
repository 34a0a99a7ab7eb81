// graph/stages.cpp — pipeline stages: layer ranges, and the graph each rank runs.
#include "graph/stages.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <string>

#include "graph/plan.h"

namespace graphrun::graph {

namespace {

// The layer of a node or weight named "blk.L....", -1 for any other name.
int layer_of(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    int layer = -1;
    const char* begin = name.data() + 4;
    const char* end = name.data() + name.size();
    auto [ptr, ec] = std::from_chars(begin, end, layer);
    return ec == std::errc() && ptr != begin && ptr < end && *ptr == '.' ? layer : -1;
}

// Which stage each node belongs to, for the ranges: layer nodes by their layer, the nodes before
// the first layer to the first stage, those after the last to the last.
std::vector<int> node_stages(const Graph& graph, const std::vector<LayerRange>& ranges) {
    std::vector<int> stage(graph.nodes.size(), -1);
    bool seen_layer = false, after_layers = false;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
        const int layer = layer_of(graph.nodes[n].name);
        if (layer < 0) {
            after_layers = after_layers || seen_layer;
            stage[n] = after_layers ? int(ranges.size()) - 1 : 0;
            continue;
        }
        if (after_layers)
            throw GraphError(graph.source + ": node '" + graph.nodes[n].name +
                             "' is a layer's, after nodes outside the layers: the graph does not cut into stages");
        seen_layer = true;
        for (size_t r = 0; r < ranges.size(); ++r)
            if (layer >= ranges[r].first && layer <= ranges[r].second) stage[n] = int(r);
    }
    return stage;
}

int count_layers(const Graph& graph) {
    int n = 0;
    for (const GraphNode& node : graph.nodes) n = std::max(n, layer_of(node.name) + 1);
    return n;
}

std::vector<LayerRange> parse_ranges(const Graph& graph, int n_ranks, std::string_view spec, int n_layer) {
    std::vector<LayerRange> ranges;
    const std::string text(spec);
    auto fail = [&](const std::string& why) {
        return GraphError("--stages '" + text + "': " + why + " (" + std::to_string(n_layer) + " layers in " +
                          graph.source + ", " + std::to_string(n_ranks) + " ranks)");
    };
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = std::min(text.find(',', at), text.size());
        const std::string part = text.substr(at, comma - at);
        int a = -1, b = -1;
        const size_t dash = part.find('-');
        const bool ok = dash != std::string::npos &&
                        std::from_chars(part.data(), part.data() + dash, a).ptr == part.data() + dash &&
                        std::from_chars(part.data() + dash + 1, part.data() + part.size(), b).ptr ==
                            part.data() + part.size();
        if (!ok || dash == 0 || dash + 1 == part.size()) throw fail("'" + part + "' is not FIRST-LAST");
        const int expected = ranges.empty() ? 0 : ranges.back().second + 1;
        if (a != expected || b < a)
            throw fail("range " + std::to_string(ranges.size()) + " must start at layer " + std::to_string(expected) +
                       " and not end before it");
        ranges.push_back({a, b});
        at = comma + 1;
    }
    if (int(ranges.size()) != n_ranks) throw fail(std::to_string(ranges.size()) + " ranges for " + std::to_string(n_ranks) + " ranks");
    if (ranges.back().second != n_layer - 1) throw fail("the last range must end at layer " + std::to_string(n_layer - 1));
    return ranges;
}

// The value a stage's nodes read that the stages before computed: at most one.
std::optional<int> crossing_value(const Graph& graph, const std::vector<int>& stage, int rank, bool into) {
    std::set<int> crossing;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
        if (into ? stage[n] != rank : stage[n] <= rank) continue;
        for (const ValueRef& ref : graph.nodes[n].inputs)
            if (ref.kind == ValueRef::Kind::Node && stage[size_t(ref.index)] < (into ? rank : rank + 1))
                crossing.insert(ref.index);
    }
    if (crossing.size() > 1) {
        std::string names;
        for (int c : crossing) names += (names.empty() ? "'" : ", '") + graph.nodes[size_t(c)].name + "'";
        throw GraphError(graph.source + ": " + std::to_string(crossing.size()) + " values cross the cut " +
                         (into ? "before" : "after") + " stage " + std::to_string(rank) + " (" + names +
                         "); a cut passes one hidden state");
    }
    if (crossing.empty()) return std::nullopt;
    return *crossing.begin();
}

// The floats per token of node `n`'s value, (n_tokens, width) f32, read off a plan of 2 tokens.
int64_t value_width(const Graph& graph, const Plan& plan, int n) {
    for (const PlanStep& step : plan.steps)
        if (step.node == n) {
            const ops::TensorDesc& d = plan.tensors[size_t(step.output)].desc;
            if (d.dtype == DType::F32 && d.shape.size() == 2 && d.shape[0] == plan.n_tokens) return d.shape[1];
            throw GraphError(graph.source + ": node '" + graph.nodes[size_t(n)].name + "' crosses a stage cut as " +
                             d.str() + "; a cut passes f32 (n_tokens, width)");
        }
    throw GraphError(graph.source + ": node '" + graph.nodes[size_t(n)].name + "' has no step");
}

}  // namespace

std::vector<LayerRange> stage_ranges(const Graph& graph, int n_ranks, std::string_view spec) {
    const int n_layer = count_layers(graph);
    if (n_ranks < 1 || n_ranks > n_layer)
        throw GraphError(graph.source + ": " + std::to_string(n_ranks) + " pipeline ranks for " +
                         std::to_string(n_layer) + " layers: at most one rank per layer");
    if (!spec.empty()) return parse_ranges(graph, n_ranks, spec, n_layer);
    std::vector<int64_t> bytes(size_t(n_layer), 0);
    int64_t total = 0;
    for (const GraphWeight& w : graph.weights)
        if (const int layer = layer_of(w.name); layer >= 0) {
            bytes[size_t(layer)] += int64_t(w.tensor->nbytes);
            total += int64_t(w.tensor->nbytes);
        }
    std::vector<LayerRange> ranges;
    int64_t sum = 0;
    int first = 0;
    for (int layer = 0; layer < n_layer; ++layer) {
        sum += bytes[size_t(layer)];
        const int r = int(ranges.size());
        const int left_after = n_layer - 1 - layer;        // layers after this one
        const int ranks_after = n_ranks - 1 - r;           // ranks after this one
        const bool share_full = sum * n_ranks >= total * (r + 1);
        if (r + 1 < n_ranks && (left_after == ranks_after || (share_full && left_after >= ranks_after))) {
            ranges.push_back({first, layer});
            first = layer + 1;
        }
    }
    ranges.push_back({first, n_layer - 1});
    return ranges;
}

Graph cut_stage(const Graph& graph, const std::vector<LayerRange>& ranges, int rank) {
    const std::vector<int> stage = node_stages(graph, ranges);
    const int n_ranks = int(ranges.size());
    Graph out;
    out.source = graph.source;
    out.symbols = graph.symbols;
    out.inputs = graph.inputs;
    GraphStage info;
    info.rank = rank;
    info.n_ranks = n_ranks;
    info.first_layer = ranges[size_t(rank)].first;
    info.last_layer = ranges[size_t(rank)].second;
    info.n_layer = count_layers(graph);

    const Plan whole = make_plan(graph, plan_shape_for(2, 1, 16));
    info.n_vocab = whole.tensors[size_t(whole.output_tensors.at(0))].desc.shape[1];
    info.whole_weight_bytes = whole.weight_bytes;
    if (graph.embedding_output >= 0) {
        const Plan with = make_plan(graph, {1, 1, 1, 1, true});
        info.n_embd = with.tensors[size_t(with.embedding_tensor)].desc.shape[1];
    }

    // Values of the whole graph -> values of the stage's graph.
    std::vector<int> node_map(graph.nodes.size(), -1), weight_map(graph.weights.size(), -1),
        state_map(graph.states.size(), -1);
    const std::optional<int> in = rank > 0 ? crossing_value(graph, stage, rank, true) : std::nullopt;
    if (in) {
        info.receives = graph.nodes[size_t(*in)].name;
        info.width_in = value_width(graph, whole, *in);
        out.inputs.push_back({"stage_in", InputKind::StageIn, info.width_in});
    }
    auto remap = [&](const ValueRef& ref) -> ValueRef {
        switch (ref.kind) {
            case ValueRef::Kind::Input:
                return ref;
            case ValueRef::Kind::Weight:
                if (weight_map[size_t(ref.index)] < 0) {
                    weight_map[size_t(ref.index)] = int(out.weights.size());
                    out.weights.push_back(graph.weights[size_t(ref.index)]);
                }
                return {ValueRef::Kind::Weight, weight_map[size_t(ref.index)]};
            case ValueRef::Kind::State:
                if (state_map[size_t(ref.index)] < 0) {
                    state_map[size_t(ref.index)] = int(out.states.size());
                    out.states.push_back(graph.states[size_t(ref.index)]);
                }
                return {ValueRef::Kind::State, state_map[size_t(ref.index)]};
            case ValueRef::Kind::Node:
                break;
        }
        if (node_map[size_t(ref.index)] >= 0) return {ValueRef::Kind::Node, node_map[size_t(ref.index)]};
        if (in && ref.index == *in) return {ValueRef::Kind::Input, int(out.inputs.size()) - 1};
        throw GraphError(graph.source + ": stage " + std::to_string(rank) + " reads '" +
                         graph.nodes[size_t(ref.index)].name + "', which another stage computes");
    };
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
        if (stage[n] != rank) continue;
        GraphNode node = graph.nodes[n];
        for (ValueRef& ref : node.inputs) ref = remap(ref);
        node_map[n] = int(out.nodes.size());
        out.nodes.push_back(std::move(node));
    }
    if (rank == n_ranks - 1) {
        for (const ValueRef& ref : graph.outputs) out.outputs.push_back(remap(ref));
        out.embedding_output = graph.embedding_output;
    } else {
        const std::optional<int> sent = crossing_value(graph, stage, rank, false);
        if (!sent) throw GraphError(graph.source + ": nothing crosses the cut after stage " + std::to_string(rank));
        info.sends = graph.nodes[size_t(*sent)].name;
        info.width_out = value_width(graph, whole, *sent);
        out.outputs.push_back(remap({ValueRef::Kind::Node, *sent}));
    }
    for (const GraphWeight& w : out.weights) info.weight_bytes += int64_t(w.tensor->nbytes);
    out.stage = info;
    return out;
}

}  // namespace graphrun::graph
