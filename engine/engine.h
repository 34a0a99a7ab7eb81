// engine/engine.h — many sequences in one forward pass over a paged, shared KV cache.
//
//   Engine engine(model, {.n_ctx = 2048, .n_seq = 8});
//   SeqId a = engine.add_sequence(), b = engine.add_sequence();
//   engine.decode({{a, 1, false}, {a, 450, true}, {b, 1, true}});   // a's prompt and b's, one pass
//   auto logits = engine.decode({{a, next_a, true}, {b, next_b, true}});   // 2 rows of n_vocab
//
// The engine owns the planned state (every layer's K and V cache, runtime/kv_blocks.h explains the
// layout), the block pool, the sequences' block tables, one arena and the plans (cached per batch shape,
// the arena sized once for the largest). decode() appends each token at its sequence's next position:
// it gives each token a cache row (allocating a block, or copying a shared one first), fills the graph
// inputs (tokens, positions, kv_slots, kv_table, logit_rows), runs the plan, and registers the blocks
// that became full so later sequences with the same first tokens can share them.
//
// Batch invariance: a sequence's logits are the same bits whatever else is in its batch, however its
// tokens were split into batches, for any thread count, and whichever blocks hold its positions. Every
// kernel computes a token's row from that row alone (and attention from the token's own sequence, in
// position order), which is what the tests in tests/engine/batch_invariance_test.cpp hold it to. Blocks found
// again under their prefix are therefore the bits a recomputation would give, so sharing them changes
// nothing but the work and memory saved.
//
// Over a pipeline (the model loaded with one, engine/pipeline.h) the engine on rank 0 tells every
// other rank each call that changes it, runs its stage's layers, and returns the rows the last rank
// sends back; the engines on the other ranks are made and driven by Pipeline::follow.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <memory>
#include <span>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "engine/model.h"
#include "engine/pipeline.h"
#include "graph/plan.h"
#include "runtime/aligned_buffer.h"
#include "runtime/executor.h"
#include "runtime/kv_blocks.h"

namespace graphrun::graph {

using SeqId = int32_t;

struct EngineOptions {
    int64_t n_ctx = 0;         // positions per sequence; 0: the model's context length, at most 2048
    int64_t n_seq = 1;         // sequences at once, for the default pool size
    int64_t kv_blocks = 0;     // blocks in the KV pool; 0: n_seq full contexts and a block each to
                               // spare for copy-on-write, n_seq * (ceil(n_ctx / 16) + 1)
    int n_threads = 0;         // 0: every core
    int64_t max_batch = 256;   // tokens in one forward pass at most
    bool prefix_cache = true;  // keep full blocks under their prefix for later sequences to share
    // Over a pipeline (engine/pipeline.h): rank 0 cuts a batch into chunks of at least this many
    // tokens, up to 2 per rank, that follow each other down the ranks; 0: one pass a batch.
    int64_t micro_batch = 32;
    ops::SimdLevel simd = ops::active_simd_level();  // the kernels' level in every plan (ops/cpu.h)
};

// One token of a batch: appended to sequence `seq` at its next position.
struct BatchToken {
    SeqId seq = 0;
    int32_t token = 0;
    bool logits = false;  // read this token's logits (the last token of a prompt, every decoded token)
};

// The pool cannot hold the blocks a batch needs; nothing of the batch was done.
class KvPoolFull : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};
// A token would go past its sequence's context (n_ctx); nothing of the batch was done.
class ContextFull : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class Engine {
  public:
    // Plans the largest batch and allocates the arena and the KV cache. Throws std::invalid_argument for
    // options outside their ceilings (graph/plan.h), naming the option, and when the memory cannot be had.
    Engine(std::shared_ptr<const Model> model, EngineOptions options = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    SeqId add_sequence();  // an empty sequence
    // A new sequence holding every position of `from` (the blocks are shared; the first write into a
    // shared block copies it first).
    SeqId fork(SeqId from);
    // For an empty sequence about to take `prompt`: shares the cached blocks that hold the prompt's first
    // positions and returns how many positions the sequence now has (a multiple of the block size, or
    // one less than the prompt when the whole prompt was found, so its last token is evaluated for its
    // logits). decode() then continues from there. 0 when nothing is cached or prefix_cache is off.
    int64_t reuse_prefix(SeqId seq, std::span<const int32_t> prompt);
    // Frees the sequence; its blocks go back to the pool (full ones stay cached under their prefix).
    void remove_sequence(SeqId seq);
    // Keeps the first n positions (0 <= n <= length) and forgets the rest: blocks past them go back to
    // the pool, and a kept block that is shared or registered is copied before it is written again.
    void truncate(SeqId seq, int64_t n);

    bool has_sequence(SeqId seq) const;
    int64_t length(SeqId seq) const;  // positions held
    // The blocks the sequence may still need from the pool to reach n_positions positions (a block per
    // kKvBlockSize positions past what it holds, and one for copying a shared block it would write).
    int64_t blocks_to_grow(SeqId seq, int64_t n_positions) const;
    std::span<const int32_t> block_table(SeqId seq) const;

    // One forward pass over `batch` (1 .. max_batch tokens, any sequences, each sequence's tokens in
    // order). Returns the logits of the tokens marked `logits`, one row of n_vocab each, in batch
    // order, valid until the next call. Throws std::out_of_range (bad token or sequence), ContextFull
    // or KvPoolFull with nothing consumed.
    std::span<const float> decode(std::span<const BatchToken> batch);
    // decode() in two halves, so that over a pipeline several passes are in flight at once: while
    // rank 1 runs one group of sequences' pass, rank 0 runs the next group's (engine/scheduler.cpp).
    // submit() checks the batch and runs this rank's stage of it (as decode() does: nothing is
    // consumed when it throws); collect() returns the rows of the oldest pass submitted and not yet
    // collected, valid until the next collect() or decode(). Passes are collected in the order they
    // were submitted; a sequence's next token may be submitted only after its last pass was collected
    // (it needs the logits anyway). Without a pipeline one pass at most is in flight, and decode(),
    // embed() and the destructor want none (the destructor collects what is left and drops it).
    void submit(std::span<const BatchToken> batch);
    std::span<const float> collect();
    int64_t in_flight() const { return int64_t(in_flight_.size()); }
    // How many passes are worth having in flight: the ranks of the pipeline on its rank 0, else 1.
    int64_t pipeline_depth() const { return leads_pipeline() ? stage_->n_ranks : 1; }
    // The same pass, returning instead the graph's embedding output (the final hidden state, after
    // the final norm) of the tokens marked `logits`: one row of n_embd() each, in batch order, valid
    // until the next call. The plan keeps that output (PlanShape::embedding); throws ops::PlanError
    // when the graph declares none.
    std::span<const float> embed(std::span<const BatchToken> batch);
    int64_t n_embd() const { return n_embd_; }  // 0 when the graph declares no embedding output

    int64_t n_ctx() const { return n_ctx_; }
    int64_t n_vocab() const { return n_vocab_; }
    int64_t max_batch() const { return options_.max_batch; }
    int n_threads() const { return executor_.n_threads(); }
    const Model& model() const { return *model_; }
    // Every step of later passes is timed into `timeline` (engine/profile.h); nullptr stops that.
    void set_timeline(StepTimeline* timeline) { executor_.set_timeline(timeline); }
    const KvBlockPool& pool() const { return pool_; }
    int64_t kv_bytes() const { return kv_bytes_; }
    int64_t n_sequences() const { return n_sequences_; }
    // The plan for batches of n_tokens tokens of which n_outputs get logits (made and cached on use);
    // `embedding`: the plan embed() runs, which keeps the embedding output too.
    const Plan& plan(int64_t n_tokens, int64_t n_outputs = 1, bool embedding = false) {
        return bound(n_tokens, n_outputs, embedding).plan;
    }

  private:
    struct BoundPlan {
        Plan plan;
        std::vector<Step> steps;
        uint64_t last_used = 0;
    };
    struct Sequence {
        bool live = false;
        int64_t length = 0;
        std::vector<int32_t> blocks;  // block table: position p is in blocks[p / kKvBlockSize]
        std::vector<int32_t> tokens;  // the token at each position held
        size_t registered = 0;        // blocks[0 .. registered) are registered in the pool's prefix cache
    };

    BoundPlan& bound(int64_t n_tokens, int64_t n_outputs, bool embedding = false);
    bool leads_pipeline() const { return stage_ && stage_->n_ranks > 1 && stage_->first(); }
    void require_none_in_flight(const char* call) const;
    struct Pass {
        BoundPlan* bound;
        std::vector<int32_t> rows;  // the batch rows read
        size_t n_wanted;            // how many of them were asked for (a plan computes at least one)
    };
    Pass run_pass(std::span<const BatchToken> batch, bool embedding);
    std::span<const float> read_rows(const Pass& pass, int tensor, int64_t width);
    // The rows asked for, over a pipeline too: the last rank sends them to rank 0, which returns them.
    std::span<const float> output_rows(const Pass& pass, bool embedding);
    void tell(const PipelineMessage& m);  // rank 0 of a pipeline: to the other ranks
    SeqId new_sequence();                 // add_sequence's work, told by its caller
    std::vector<int64_t> positions_of(std::span<const BatchToken> batch, std::map<SeqId, int64_t>& next) const;
    std::set<std::pair<SeqId, int64_t>> count_blocks(std::span<const BatchToken> batch,
                                                     const std::vector<int64_t>& positions) const;
    void exchange_activations(const BoundPlan& bp, int64_t n_tokens, bool before_run);
    Sequence& sequence(SeqId seq);
    const Sequence& sequence(SeqId seq) const;
    void prepare_blocks(std::span<const BatchToken> batch, const std::vector<int64_t>& positions);
    void copy_block(int32_t from, int32_t to);
    void register_full_blocks(Sequence& s);
    void fill_inputs(const BoundPlan& bp, std::span<const BatchToken> batch,
                     const std::vector<int64_t>& positions, const std::vector<int32_t>& rows);

    std::shared_ptr<const Model> model_;
    EngineOptions options_;
    int64_t n_ctx_ = 0, n_vocab_ = 0, n_embd_ = 0, table_width_ = 0, kv_bytes_ = 0, n_sequences_ = 0;
    bool selects_rows_ = false;  // the graph reads logit_rows (else its logits have a row per token)
    std::map<std::tuple<int64_t, int64_t, bool>, std::unique_ptr<BoundPlan>> plans_;
    uint64_t tick_ = 0;
    AlignedBuffer arena_;
    std::vector<AlignedBuffer> state_;  // one per Graph::states
    std::vector<void*> state_ptrs_;
    KvBlockPool pool_;
    std::vector<Sequence> sequences_;
    std::vector<SeqId> free_ids_;
    Executor executor_;
    std::vector<float> selected_;  // graphs without logit_rows: the rows asked for, gathered
    // Passes submitted and not collected: per pass, the rows asked for of each of its chunks.
    std::deque<std::vector<size_t>> in_flight_;
    std::span<const float> submitted_rows_;  // without a pipeline: the rows of the pass in flight
    Pipeline* pipeline_ = nullptr;  // the model's, when it runs over ranks
    const GraphStage* stage_ = nullptr;   // the model's graph's stage then
    int engine_id_ = -1;
};

// Plans kept per engine at most; the least recently used is dropped beyond it (and made again if needed).
constexpr size_t kMaxCachedPlans = 64;

}  // namespace graphrun::graph
