// graph/repack.cpp — weights repacked at load (graph/repack.h).
#include "graph/repack.h"

#include <tbb/parallel_for.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ops/op_table.h"
#include "ops/quant/traits.h"

namespace graphrun::graph {

namespace {

// Which weights every reader reads as its op's packed input (OpDef::packed_input): by graph weight index.
std::vector<bool> packable_weights(const Graph& graph) {
    std::vector<bool> packed(graph.weights.size(), false), other(graph.weights.size(), false);
    for (const GraphNode& node : graph.nodes) {
        const ops::OpDef* op = ops::find_graph_op(node.op);
        for (size_t i = 0; i < node.inputs.size(); ++i) {
            const ValueRef& ref = node.inputs[i];
            if (ref.kind != ValueRef::Kind::Weight) continue;
            (op && op->packed_input == int(i) ? packed : other)[size_t(ref.index)] = true;
        }
    }
    std::vector<bool> only(graph.weights.size());
    for (size_t w = 0; w < only.size(); ++w) only[w] = packed[w] && !other[w];
    return only;
}

}  // namespace

bool repack_enabled() {
    const char* v = std::getenv("GRAPHRUN_REPACK");
    return !(v && std::strcmp(v, "0") == 0);
}

void repack_weights(Graph& graph, const GgufFile& file) {
    const std::vector<bool> packable = packable_weights(graph);
    for (size_t i = 0; i < graph.weights.size(); ++i) {
        GraphWeight& gw = graph.weights[i];
        const GgufTensor& t = *gw.tensor;
        const ops::QuantTraits* tr = ops::quant_traits(t.type);
        if (!packable[i] || !tr || !tr->packed_gemm || gw.packed) continue;
        const std::vector<int64_t> shape = t.shape();
        if (shape.size() != 2 || shape[0] % tr->packed_rows != 0) continue;
        const int64_t n_rows = shape[0], k = shape[1], row = row_bytes(t.type, k);
        // Uninitialised: the groups below write every byte.
        auto packed = std::make_shared<AlignedBuffer>(int64_t(t.nbytes), 64, AlignedBuffer::Uninitialised{});
        // Groups of packed_rows rows are packed independently: a few groups per task.
        const int64_t group = tr->packed_rows, n_groups = n_rows / group;
        tbb::parallel_for(
            tbb::blocked_range<int64_t>(0, n_groups, 16), [&](const tbb::blocked_range<int64_t>& r) {
                const int64_t r0 = r.begin() * group, n = (r.end() - r.begin()) * group;
                tr->pack(static_cast<const uint8_t*>(t.data) + r0 * row, packed->data() + r0 * row, n, k);
            });
        gw.packed = std::move(packed);
        file.release_pages(t);
    }
}

}  // namespace graphrun::graph
