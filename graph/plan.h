// graph/plan.h — an execution plan: steps in order, every tensor's place, and the planned state.
//
// make_plan decides everything once for one shape of batch (PlanShape): kernel per node, output shapes,
// lifetimes and arena offsets, and the state tensors (the KV cache) with their sizes. bind_plan turns
// offsets into pointers (once), giving the runtime Steps that the executor runs without allocating or
// looking anything up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/limits.h"
#include "ops/op_table.h"
#include "runtime/kv_blocks.h"

namespace graphrun::graph {

constexpr int64_t kArenaAlignment = 64;  // a cache line, and enough for any SIMD load

// What a plan is made for. Plans are cached per (n_tokens, n_outputs, embedding); the KV sizes are the
// session's.
struct PlanShape {
    int64_t n_tokens = 1;   // tokens in the batch
    int64_t n_outputs = 1;  // rows of logit_rows (1 .. n_tokens), for graphs that select rows
    int64_t kv_blocks =
        1;  // blocks in the KV pool: every KV cache state is (kv_blocks * kKvBlockSize, width)
    int64_t table_width = 1;  // block-table entries per token: ceil(n_ctx / kKvBlockSize)
    bool embedding = false;   // also keep the graph's "embedding" output, (n_outputs, n_embd), to read
};

// A plan's KV pool for n_seq sequences of up to n_ctx positions each (the single-sequence shape when
// n_seq is 1): table_width = ceil(n_ctx / kKvBlockSize), kv_blocks = n_seq * table_width.
PlanShape plan_shape_for(int64_t n_tokens, int64_t n_outputs, int64_t n_ctx, int64_t n_seq = 1);

struct PlanTensor {
    // Input: filled by the session; Weight: mapped from the model; Intermediate, Scratch: in the arena,
    // alive for [first_step, last_step]; State: memory of its own that the session keeps between runs
    // (a KV cache), the same for every plan of a session.
    enum class Kind { Input, Weight, Intermediate, Scratch, State };
    std::string name;
    ops::TensorDesc desc;
    Kind kind = Kind::Intermediate;
    const void* weight_data = nullptr;  // Weight: into the model mapping
    int64_t offset = -1;                // Input, Intermediate, Scratch: arena offset
    int64_t bytes = 0;
    int first_step = 0;  // lifetime in steps, inclusive: written at first_step, last read at last_step
    int last_step = 0;
    int reuses = -1;  // in-place: the tensor whose bytes this one takes over (its last reader writes us)
    int state = -1;   // State: index into Graph::states (and Plan::state_tensors)
};
const char* plan_tensor_kind_name(PlanTensor::Kind kind);

struct PlanStep {
    int node = 0;  // into Graph::nodes
    const ops::OpDef* op = nullptr;
    std::vector<int> inputs;  // into Plan::tensors
    int output = -1;          // a new tensor, or (an op that writes state) the State tensor it updates
    int scratch = -1;         // a Scratch tensor, or -1
    OpParams params;
};

struct Plan {
    PlanShape shape;
    ops::SimdLevel simd = ops::SimdLevel::Scalar;  // every step runs its row's kernel of this level
    int64_t n_tokens = 0;  // shape.n_tokens
    std::vector<PlanTensor> tensors;
    std::vector<PlanStep> steps;
    std::vector<int> input_tensors;   // one per Graph::inputs, in order
    std::vector<int> output_tensors;  // one per Graph::outputs, in order; -1 for an output not kept
    int embedding_tensor = -1;        // shape.embedding: the embedding output's tensor
    std::vector<int> state_tensors;   // one per Graph::states, in order
    int64_t arena_bytes = 0;          // peak: the arena every intermediate fits in
    int64_t naive_bytes = 0;          // the sum of all intermediates, as if nothing were reused
    int64_t state_bytes = 0;          // the sum of the state tensors (the KV cache)
    int64_t weight_bytes = 0;         // bytes of the weights the plan reads
    int64_t packed_weight_bytes = 0;  // of those, repacked at load (TensorDesc::layout), not mapped
};

// Plans `graph` for one batch shape. Throws ops::PlanError naming the node on any shape, dtype or
// arity problem, and on state used wrongly: an attention (or any op that reads state) on something
// that is not a KV cache, a cache no node writes before it is read, one cache written by two nodes or
// read by two attention nodes (two layers sharing one cache by accident), state fed to an op that
// takes none. `simd` is the level whose kernels the plan binds (ops/cpu.h); a level this CPU lacks is
// std::invalid_argument.
Plan make_plan(const Graph& graph, const PlanShape& shape, ops::SimdLevel simd = ops::active_simd_level());

// The single-sequence shape: a batch of n_tokens of one sequence of up to n_ctx positions, logits for
// the last (--dump-plan, and tools that only look at a plan).
inline Plan make_plan(const Graph& graph, int64_t n_tokens, int64_t n_ctx,
                      ops::SimdLevel simd = ops::active_simd_level()) {
    return make_plan(graph, plan_shape_for(n_tokens, 1, n_ctx), simd);
}

// Places Input/Intermediate/Scratch tensors: largest first, each into the smallest aligned gap
// free for its whole lifetime; in-place outputs share their input's bytes. Sets offsets and
// arena_bytes. (make_plan calls it; separate so tests can hand it odd lifetimes.)
void assign_arena_offsets(Plan& plan);

// Checks that no two tensors alive at the same time share a byte (except an in-place hand-off),
// and that everything lies inside the arena, aligned. Throws ops::PlanError on the first problem.
void verify_plan(const Plan& plan);

// Offsets -> pointers. `arena` must hold plan.arena_bytes, aligned to kArenaAlignment; state[i] is the
// memory of Graph::states[i], plan.tensors[plan.state_tensors[i]].bytes long.
std::vector<Step> bind_plan(const Plan& plan, uint8_t* arena, const std::vector<void*>& state);

// For people and for tools: every step with kernel, tensors, shapes, offsets; the state; the totals.
std::string dump_plan_text(const Plan& plan, const Graph& graph);
std::string dump_plan_json(const Plan& plan, const Graph& graph);

}  // namespace graphrun::graph
