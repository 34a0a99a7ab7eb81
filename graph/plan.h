// graph/plan.h — an execution plan: steps in order, every tensor's place, and the KV cache size.
//
// make_plan decides everything once for a batch of n_tokens: kernel per node, output shapes,
// lifetimes and arena offsets. bind_plan turns offsets into pointers (once), giving the runtime
// Steps that the executor runs without allocating or looking anything up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op_table.h"
#include "runtime/checked_math.h"
#include "runtime/kv_cache.h"

namespace graphrun::graph {

constexpr int64_t kArenaAlignment = 64;  // a cache line, and enough for any SIMD load

struct PlanTensor {
    enum class Kind { Input, Weight, Intermediate, Scratch };
    std::string name;
    ops::TensorDesc desc;
    Kind kind = Kind::Intermediate;
    const void* weight_data = nullptr;  // Weight: into the model mapping
    int64_t offset = -1;                // Input, Intermediate, Scratch: arena offset
    int64_t bytes = 0;
    int first_step = 0;  // lifetime in steps, inclusive: written at first_step, last read at last_step
    int last_step = 0;
    int reuses = -1;  // in-place: the tensor whose bytes this one takes over (its last reader writes us)
};
const char* plan_tensor_kind_name(PlanTensor::Kind kind);

struct PlanStep {
    int node = 0;  // into Graph::nodes
    const ops::OpDef* op = nullptr;
    std::vector<int> inputs;  // into Plan::tensors
    int output = -1;
    int scratch = -1;  // a Scratch tensor, or -1
    OpParams params;
};

struct KvCacheSpec {
    int64_t n_layer = 0;
    int64_t n_ctx = 0;
    int64_t row = 0;  // n_head_kv * head_dim
    int64_t bytes() const {  // k and v, fp16; throws SizeError when it overflows (make_plan checks it)
        return checked_product({2, n_layer, n_ctx, row, int64_t(sizeof(uint16_t))}, "KV cache bytes");
    }
};

struct Plan {
    int64_t n_tokens = 0;
    std::vector<PlanTensor> tensors;
    std::vector<PlanStep> steps;
    std::vector<int> input_tensors;   // one per Graph::inputs, in order
    std::vector<int> output_tensors;  // one per Graph::outputs, in order
    KvCacheSpec kv;
    int64_t arena_bytes = 0;   // peak: the arena every intermediate fits in
    int64_t naive_bytes = 0;   // the sum of all intermediates, as if nothing were reused
    int64_t weight_bytes = 0;  // bytes of the mapped weights the plan reads
};

// Plans `graph` for batches of n_tokens tokens and a KV cache of n_ctx positions.
// Throws ops::PlanError naming the node on any shape, dtype or arity problem.
Plan make_plan(const Graph& graph, int64_t n_tokens, int64_t n_ctx);

// Places Input/Intermediate/Scratch tensors: largest first, each into the smallest aligned gap
// free for its whole lifetime; in-place outputs share their input's bytes. Sets offsets and
// arena_bytes. (make_plan calls it; separate so tests can hand it odd lifetimes.)
void assign_arena_offsets(Plan& plan);

// Checks that no two tensors alive at the same time share a byte (except an in-place hand-off),
// and that everything lies inside the arena, aligned. Throws ops::PlanError on the first problem.
void verify_plan(const Plan& plan);

// Offsets -> pointers. `arena` must hold plan.arena_bytes, aligned to kArenaAlignment.
std::vector<Step> bind_plan(const Plan& plan, uint8_t* arena, KvCache& kv);

// For people and for tools: every step with kernel, tensors, shapes, offsets; then the totals.
std::string dump_plan_text(const Plan& plan, const Graph& graph);
std::string dump_plan_json(const Plan& plan, const Graph& graph);

}  // namespace graphrun::graph
