// engine/engine.cpp — sequences, block tables and the forward pass over a batch of them.
#include "engine/engine.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <set>
#include <string>

#include "runtime/checked_math.h"

namespace graphrun::graph {

namespace {

void check_option(const char* name, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi)
        throw std::invalid_argument(std::string(name) + " " + std::to_string(value) + " is outside " +
                                    std::to_string(lo) + " .. " + std::to_string(hi));
}

}  // namespace

Engine::Engine(std::shared_ptr<const Model> model, EngineOptions options)
    : model_(std::move(model)), options_(options), executor_(options.n_threads) {
    const int64_t trained = model_->context_length() > 0 ? model_->context_length() : 2048;
    n_ctx_ = options_.n_ctx > 0 ? options_.n_ctx : std::min<int64_t>(trained, 2048);
    check_option("the context (n_ctx, -c)", n_ctx_, 1, kMaxContext);
    check_option("the sequence count (n_seq, --parallel)", options_.n_seq, 1, kMaxSequences);
    check_option("the batch size (max_batch)", options_.max_batch, 1, kMaxBatch);
    table_width_ = ceil_div(n_ctx_, kKvBlockSize);
    const int64_t blocks = options_.kv_blocks > 0 ? options_.kv_blocks : options_.n_seq * (table_width_ + 1);
    check_option("the KV pool (blocks of 16 positions: n_seq x (n_ctx / 16 + 1), or kv_blocks)", blocks, 1,
                 kMaxKvBlocks);
    selects_rows_ = model_->graph().input(InputKind::LogitRows) != nullptr;
    if (model_->pipeline()) {
        pipeline_ = model_->pipeline();
        stage_ = &*model_->graph().stage;
    }

    // The largest plan first: its arena is the one every other plan fits in (bound() grows it if not).
    const Plan largest =
        make_plan(model_->graph(), {options_.max_batch, options_.max_batch, blocks, table_width_}, options_.simd);
    const ops::TensorDesc& logits = largest.tensors[size_t(largest.output_tensors.at(0))].desc;
    n_vocab_ = stage_ ? stage_->n_vocab : logits.shape[1];
    if (stage_ && !stage_->last()) {
        n_embd_ = stage_->n_embd;
    } else if (model_->graph().embedding_output >= 0) {  // its shape checked now, not at the first request
        const Plan one = make_plan(model_->graph(), {1, 1, blocks, table_width_, true}, options_.simd);
        n_embd_ = one.tensors[size_t(one.embedding_tensor)].desc.shape[1];
    }
    kv_bytes_ = largest.state_bytes;
    const int64_t memory = physical_memory_bytes();
    if (memory > 0 && kv_bytes_ + largest.arena_bytes > memory)
        throw std::invalid_argument("the KV cache of " + std::to_string(kv_bytes_) + " bytes (" +
                                    std::to_string(blocks) + " blocks for " + std::to_string(options_.n_seq) +
                                    " sequences of " + std::to_string(n_ctx_) + " positions) and the arena of " +
                                    std::to_string(largest.arena_bytes) + " bytes are more than this machine's " +
                                    std::to_string(memory) + " bytes of memory: lower -c or --parallel");
    try {
        arena_ = AlignedBuffer(largest.arena_bytes, kArenaAlignment);
        for (int id : largest.state_tensors) {
            state_.emplace_back(largest.tensors[size_t(id)].bytes, kArenaAlignment);
            state_ptrs_.push_back(state_.back().data());
        }
    } catch (const std::bad_alloc&) {
        throw std::invalid_argument("cannot allocate the KV cache of " + std::to_string(kv_bytes_) +
                                    " bytes (" + std::to_string(blocks) + " blocks for " +
                                    std::to_string(options_.n_seq) + " sequences of " +
                                    std::to_string(n_ctx_) + " positions) and an arena of " +
                                    std::to_string(largest.arena_bytes) + " bytes: lower -c or --parallel");
    }
    pool_ = KvBlockPool(int32_t(blocks));
    if (pipeline_) {
        engine_id_ = pipeline_->next_engine_id();
        tell(PipelineMessage()
                 .put(int64_t(PipelineCommand::MakeEngine))
                 .put(engine_id_)
                 .put(model_->pipeline_id())
                 .put(options_.n_ctx)
                 .put(options_.n_seq)
                 .put(options_.kv_blocks)
                 .put(options_.n_threads)
                 .put(options_.max_batch)
                 .put(options_.prefix_cache ? 1 : 0)
                 .put(int64_t(options_.simd)));
    }
}

Engine::~Engine() {
    try {
        while (!in_flight_.empty()) collect();  // the last rank's rows of passes nobody collected
        if (pipeline_) tell(PipelineMessage().put(int64_t(PipelineCommand::DropEngine)).put(engine_id_));
    } catch (const StageLinkError&) {  // a rank already gone: its engine went with it
    }
}

void Engine::tell(const PipelineMessage& m) {
    if (pipeline_ && pipeline_->leads()) pipeline_->tell(m);
}

Engine::BoundPlan& Engine::bound(int64_t n_tokens, int64_t n_outputs, bool embedding) {
    if (!selects_rows_) n_outputs = n_tokens;
    const auto key = std::make_tuple(n_tokens, n_outputs, embedding);
    if (auto it = plans_.find(key); it != plans_.end()) {
        it->second->last_used = ++tick_;
        return *it->second;
    }
    if (plans_.size() >= kMaxCachedPlans) {
        auto oldest = std::min_element(plans_.begin(), plans_.end(), [](const auto& a, const auto& b) {
            return a.second->last_used < b.second->last_used;
        });
        plans_.erase(oldest);
    }
    auto entry = std::make_unique<BoundPlan>();
    entry->plan = make_plan(model_->graph(), {n_tokens, n_outputs, pool_.n_blocks(), table_width_, embedding},
                            options_.simd);
    const ops::TensorDesc& logits = entry->plan.tensors[size_t(entry->plan.output_tensors[0])].desc;
    if ((!stage_ || stage_->last()) && logits.shape[1] != n_vocab_)
        throw ops::PlanError("[plan] the logits of a batch of " + std::to_string(n_tokens) + " have " +
                             std::to_string(logits.shape[1]) + " columns, other batches " +
                             std::to_string(n_vocab_));
    if (entry->plan.arena_bytes > arena_.size()) {
        // A plan the largest one did not cover: every cached plan is bound again to a bigger arena.
        arena_ = AlignedBuffer(entry->plan.arena_bytes, kArenaAlignment);
        for (auto& [k, other] : plans_) other->steps = bind_plan(other->plan, arena_.data(), state_ptrs_);
    }
    entry->steps = bind_plan(entry->plan, arena_.data(), state_ptrs_);
    entry->last_used = ++tick_;
    return *plans_.emplace(key, std::move(entry)).first->second;
}

Engine::Sequence& Engine::sequence(SeqId seq) {
    if (seq < 0 || size_t(seq) >= sequences_.size() || !sequences_[size_t(seq)].live)
        throw std::out_of_range("no sequence " + std::to_string(seq));
    return sequences_[size_t(seq)];
}
const Engine::Sequence& Engine::sequence(SeqId seq) const {
    return const_cast<Engine*>(this)->sequence(seq);
}

bool Engine::has_sequence(SeqId seq) const {
    return seq >= 0 && size_t(seq) < sequences_.size() && sequences_[size_t(seq)].live;
}
int64_t Engine::length(SeqId seq) const {
    return sequence(seq).length;
}
std::span<const int32_t> Engine::block_table(SeqId seq) const {
    return sequence(seq).blocks;
}

SeqId Engine::add_sequence() {
    tell(PipelineMessage().put(int64_t(PipelineCommand::AddSequence)).put(engine_id_));
    return new_sequence();
}

SeqId Engine::new_sequence() {
    if (n_sequences_ >= kMaxSequences)
        throw std::length_error("already " + std::to_string(n_sequences_) +
                                " sequences, the most one engine holds");
    SeqId id;
    if (!free_ids_.empty()) {
        id = free_ids_.back();
        free_ids_.pop_back();
    } else {
        id = SeqId(sequences_.size());
        sequences_.emplace_back();
    }
    sequences_[size_t(id)] = Sequence{};
    sequences_[size_t(id)].live = true;
    ++n_sequences_;
    return id;
}

SeqId Engine::fork(SeqId from) {
    sequence(from);  // throws for a bad id before anything changes
    tell(PipelineMessage().put(int64_t(PipelineCommand::Fork)).put(engine_id_).put(from));
    const SeqId id = new_sequence();
    Sequence& s = sequences_[size_t(id)];
    s = sequences_[size_t(from)];
    for (int32_t b : s.blocks) pool_.retain(b);
    return id;
}

int64_t Engine::reuse_prefix(SeqId seq, std::span<const int32_t> prompt) {
    Sequence& s = sequence(seq);
    if (pipeline_ && pipeline_->leads()) {
        PipelineMessage m;
        m.put(int64_t(PipelineCommand::ReusePrefix)).put(engine_id_).put(seq).put(int64_t(prompt.size()));
        for (int32_t t : prompt) m.put(t);
        tell(m);
    }
    if (s.length != 0)
        throw std::logic_error("reuse_prefix: sequence " + std::to_string(seq) + " is not empty");
    if (!options_.prefix_cache || prompt.empty()) return 0;
    int32_t parent = -1;
    size_t n = 0;
    while (n + size_t(kKvBlockSize) <= prompt.size()) {
        const int32_t b = pool_.find(parent, prompt.subspan(n, size_t(kKvBlockSize)));
        if (b < 0) break;
        pool_.retain(b);
        s.blocks.push_back(b);
        parent = b;
        n += size_t(kKvBlockSize);
    }
    s.registered = s.blocks.size();
    s.length = int64_t(std::min(n, prompt.size() - 1));
    s.tokens.assign(prompt.begin(), prompt.begin() + s.length);
    return s.length;
}

void Engine::remove_sequence(SeqId seq) {
    Sequence& s = sequence(seq);
    tell(PipelineMessage().put(int64_t(PipelineCommand::RemoveSequence)).put(engine_id_).put(seq));
    for (int32_t b : s.blocks) pool_.release(b);
    s = Sequence{};
    free_ids_.push_back(seq);
    --n_sequences_;
}

void Engine::truncate(SeqId seq, int64_t n) {
    Sequence& s = sequence(seq);
    tell(PipelineMessage().put(int64_t(PipelineCommand::Truncate)).put(engine_id_).put(seq).put(n));
    if (n < 0 || n > s.length)
        throw std::invalid_argument("truncate(" + std::to_string(n) + "): sequence " + std::to_string(seq) +
                                    " holds " + std::to_string(s.length) + " positions");
    const size_t keep = size_t(ceil_div(n, kKvBlockSize));
    for (size_t b = keep; b < s.blocks.size(); ++b) pool_.release(s.blocks[b]);
    s.blocks.resize(keep);
    s.registered = std::min(s.registered, keep);
    s.tokens.resize(size_t(n));
    s.length = n;
}

int64_t Engine::blocks_to_grow(SeqId seq, int64_t n_positions) const {
    const Sequence& s = sequence(seq);
    const int64_t target = std::min(n_positions, n_ctx_);
    int64_t need = std::max<int64_t>(0, ceil_div(target, kKvBlockSize) - int64_t(s.blocks.size()));
    const size_t next = size_t(s.length / kKvBlockSize);
    if (target > s.length && next < s.blocks.size() && !pool_.writable(s.blocks[next])) ++need;
    return need;
}

void Engine::copy_block(int32_t from, int32_t to) {
    for (size_t i = 0; i < state_.size(); ++i) {
        const int64_t block_bytes =
            kKvBlockSize * model_->graph().states[i].width * int64_t(sizeof(uint16_t));
        std::memcpy(state_[i].data() + to * block_bytes, state_[i].data() + from * block_bytes,
                    size_t(block_bytes));
    }
}

// Gives every token of the batch a writable row: a new block where its sequence has none yet, a
// private copy of a shared or registered block it would write into. Counted first, so a pool that is
// short changes nothing.
std::set<std::pair<SeqId, int64_t>> Engine::count_blocks(std::span<const BatchToken> batch,
                                                          const std::vector<int64_t>& positions) const {
    std::set<std::pair<SeqId, int64_t>> blocks;  // (sequence, block index) the batch writes into
    for (size_t i = 0; i < batch.size(); ++i) blocks.insert({batch[i].seq, positions[i] / kKvBlockSize});
    int64_t needed = 0;
    for (const auto& [seq, index] : blocks) {
        const Sequence& s = sequences_[size_t(seq)];
        if (size_t(index) >= s.blocks.size() || !pool_.writable(s.blocks[size_t(index)])) ++needed;
    }
    if (needed > pool_.n_available())
        throw KvPoolFull("the KV pool has " + std::to_string(pool_.n_available()) + " of " +
                         std::to_string(pool_.n_blocks()) + " blocks free or cached, this batch needs " +
                         std::to_string(needed));
    return blocks;
}

void Engine::prepare_blocks(std::span<const BatchToken> batch, const std::vector<int64_t>& positions) {
    const std::set<std::pair<SeqId, int64_t>> blocks = count_blocks(batch, positions);
    for (const auto& [seq, index] : blocks) {  // in order of index per sequence, so tables grow in order
        Sequence& s = sequences_[size_t(seq)];
        if (size_t(index) == s.blocks.size()) {
            s.blocks.push_back(pool_.allocate());
        } else if (!pool_.writable(s.blocks[size_t(index)])) {
            const int32_t copy = pool_.allocate();
            copy_block(s.blocks[size_t(index)], copy);
            pool_.release(s.blocks[size_t(index)]);
            s.blocks[size_t(index)] = copy;
            s.registered = std::min(s.registered, size_t(index));
        }
    }
}

void Engine::fill_inputs(const BoundPlan& bp, std::span<const BatchToken> batch,
                         const std::vector<int64_t>& positions, const std::vector<int32_t>& rows) {
    const Graph& g = model_->graph();
    const int64_t n = int64_t(batch.size());
    for (size_t i = 0; i < g.inputs.size(); ++i) {
        const PlanTensor& t = bp.plan.tensors[size_t(bp.plan.input_tensors[i])];
        auto* dst = reinterpret_cast<int32_t*>(arena_.data() + t.offset);
        switch (g.inputs[i].kind) {
            case InputKind::Tokens:
                for (int64_t k = 0; k < n; ++k) dst[k] = batch[size_t(k)].token;
                break;
            case InputKind::Positions:
                for (int64_t k = 0; k < n; ++k) dst[k] = int32_t(positions[size_t(k)]);
                break;
            case InputKind::KvSlots:
                for (int64_t k = 0; k < n; ++k) {
                    const Sequence& s = sequences_[size_t(batch[size_t(k)].seq)];
                    const int64_t p = positions[size_t(k)];
                    dst[k] = int32_t(s.blocks[size_t(p / kKvBlockSize)] * kKvBlockSize + p % kKvBlockSize);
                }
                break;
            case InputKind::KvTable:
                // Entries past a sequence's length are never read; they get block 0, a valid row.
                for (int64_t k = 0; k < n; ++k) {
                    const Sequence& s = sequences_[size_t(batch[size_t(k)].seq)];
                    int32_t* row = dst + k * table_width_;
                    std::copy(s.blocks.begin(), s.blocks.end(), row);
                    std::fill(row + s.blocks.size(), row + table_width_, 0);
                }
                break;
            case InputKind::LogitRows:
                std::copy(rows.begin(), rows.end(), dst);
                break;
            case InputKind::StageIn:  // received from the rank before (exchange_activations)
                break;
        }
    }
}

void Engine::register_full_blocks(Sequence& s) {
    if (!options_.prefix_cache) return;
    while (s.registered < s.blocks.size() && int64_t(s.registered + 1) * kKvBlockSize <= s.length) {
        const size_t i = s.registered++;
        const int32_t block = s.blocks[i];
        if (pool_.registered(block)) continue;  // found in the cache, or registered by a fork's sibling
        const int32_t parent = i == 0 ? -1 : s.blocks[i - 1];
        const std::span<const int32_t> tokens(s.tokens.data() + i * size_t(kKvBlockSize),
                                              size_t(kKvBlockSize));
        const int32_t existing = pool_.find(parent, tokens);
        if (existing >= 0) {
            // Another sequence computed the same positions of the same prefix: the same bits (batch
            // invariance), so share its block and give ours back.
            pool_.retain(existing);
            pool_.release(block);
            s.blocks[i] = existing;
        } else {
            pool_.register_block(block, parent, tokens);
        }
    }
}

std::span<const float> Engine::decode(std::span<const BatchToken> batch) {
    require_none_in_flight("decode");
    submit(batch);
    return collect();
}

void Engine::require_none_in_flight(const char* call) const {
    if (!in_flight_.empty())
        throw std::logic_error(std::string(call) + ": " + std::to_string(in_flight_.size()) +
                               " passes submitted are not collected yet");
}

void Engine::submit(std::span<const BatchToken> batch) {
    if (!leads_pipeline()) {
        require_none_in_flight("submit");  // one arena: one pass at a time
        submitted_rows_ = output_rows(run_pass(batch, false), false);
        in_flight_.push_back({});
        return;
    }
    // Rank 0 of a pipeline: this stage's layers, and the hidden state sent on to rank 1. A batch of
    // many tokens (a prompt) is cut into chunks that follow each other down the ranks, so while
    // rank 1 runs chunk c rank 0 runs chunk c + 1. The bits are one pass's (a sequence's tokens stay
    // in order, and chunking changes no sum). The whole batch is checked first, so one that does not
    // fit consumes nothing.
    const int64_t n = int64_t(batch.size());
    const int64_t chunks = options_.micro_batch > 0 && n <= options_.max_batch
                               ? std::min<int64_t>(n / options_.micro_batch, 2 * stage_->n_ranks)
                               : 1;
    std::vector<size_t> wanted;
    if (chunks <= 1) {
        wanted.push_back(run_pass(batch, false).n_wanted);
    } else {
        std::map<SeqId, int64_t> next;
        const std::vector<int64_t> positions = positions_of(batch, next);
        count_blocks(batch, positions);
        for (int64_t c = 0; c < chunks; ++c) {
            const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
            wanted.push_back(run_pass(batch.subspan(size_t(begin), size_t(end - begin)), false).n_wanted);
        }
    }
    in_flight_.push_back(std::move(wanted));
}

std::span<const float> Engine::collect() {
    if (in_flight_.empty()) throw std::logic_error("collect: no pass is in flight");
    const std::vector<size_t> wanted = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (!leads_pipeline()) return submitted_rows_;
    size_t rows = 0;
    for (size_t w : wanted) rows += w;
    selected_.resize(rows * size_t(n_vocab_));
    float* at = selected_.data();
    for (size_t w : wanted) {  // each chunk's rows, as the last rank sent them
        pipeline_->link().recv(stage_->n_ranks - 1, output_tag(engine_id_), at, w * size_t(n_vocab_) * sizeof(float));
        at += w * size_t(n_vocab_);
    }
    return selected_;
}

std::span<const float> Engine::embed(std::span<const BatchToken> batch) {
    if (n_embd_ == 0)
        throw ops::PlanError(
            "[plan] " + model_->graph().source +
            " declares no embedding output (\"outputs\": {\"logits\": ..., \"embedding\": ...})");
    require_none_in_flight("embed");
    return output_rows(run_pass(batch, true), true);
}

std::span<const float> Engine::output_rows(const Pass& pass, bool embedding) {
    const int64_t width = embedding ? n_embd_ : n_vocab_;
    const Plan& plan = pass.bound->plan;
    if (!stage_ || stage_->n_ranks == 1)
        return read_rows(pass, embedding ? plan.embedding_tensor : plan.output_tensors[0], width);
    if (stage_->last()) {
        const std::span<const float> rows =
            read_rows(pass, embedding ? plan.embedding_tensor : plan.output_tensors[0], width);
        pipeline_->link().send(0, output_tag(engine_id_), rows.data(), rows.size_bytes());
        return rows;
    }
    if (!stage_->first()) return {};  // a middle rank: the rows are the last rank's to send
    selected_.resize(pass.n_wanted * size_t(width));
    pipeline_->link().recv(stage_->n_ranks - 1, output_tag(engine_id_), selected_.data(),
                           selected_.size() * sizeof(float));
    return selected_;
}

// Over a pipeline: before the run, the hidden state of the batch from the rank before (into the
// stage_in input); after it, this stage's output to the rank after.
void Engine::exchange_activations(const BoundPlan& bp, int64_t n_tokens, bool before_run) {
    if (!stage_ || stage_->n_ranks == 1) return;
    const Plan& plan = bp.plan;
    StageLink& link = pipeline_->link();
    if (before_run && !stage_->first()) {
        const Graph& g = model_->graph();
        for (size_t i = 0; i < g.inputs.size(); ++i)
            if (g.inputs[i].kind == InputKind::StageIn)
                link.recv(stage_->rank - 1, activation_tag(engine_id_),
                          arena_.data() + plan.tensors[size_t(plan.input_tensors[i])].offset,
                          size_t(n_tokens * stage_->width_in) * sizeof(float));
    }
    if (!before_run && !stage_->last())
        link.send(stage_->rank + 1, activation_tag(engine_id_),
                  arena_.data() + plan.tensors[size_t(plan.output_tensors[0])].offset,
                  size_t(n_tokens * stage_->width_out) * sizeof(float));
}

// Each token's position: its sequence's length plus the sequence's tokens before it in the batch
// (`next`: each sequence's length after the batch). Throws for a bad sequence or token and ContextFull.
std::vector<int64_t> Engine::positions_of(std::span<const BatchToken> batch, std::map<SeqId, int64_t>& next) const {
    std::vector<int64_t> positions(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
        const BatchToken& bt = batch[i];
        if (!has_sequence(bt.seq))
            throw std::out_of_range("batch token " + std::to_string(i) + ": no sequence " +
                                    std::to_string(bt.seq));
        if (bt.token < 0 || bt.token >= n_vocab_)
            throw std::out_of_range("batch token " + std::to_string(i) + " has id " +
                                    std::to_string(bt.token) + ", outside the vocabulary of " +
                                    std::to_string(n_vocab_));
        auto [it, first] = next.try_emplace(bt.seq, sequences_[size_t(bt.seq)].length);
        positions[i] = it->second++;
        if (positions[i] >= n_ctx_)
            throw ContextFull("sequence " + std::to_string(bt.seq) + " is full: position " +
                              std::to_string(positions[i]) + " is past its context of " +
                              std::to_string(n_ctx_) + " positions");
    }
    return positions;
}

Engine::Pass Engine::run_pass(std::span<const BatchToken> batch, bool embedding) {
    const int64_t n = int64_t(batch.size());
    if (n < 1 || n > options_.max_batch)
        throw std::invalid_argument("decode: a batch of " + std::to_string(n) + " tokens, expected 1 .. " +
                                    std::to_string(options_.max_batch));
    std::map<SeqId, int64_t> next;
    const std::vector<int64_t> positions = positions_of(batch, next);
    std::vector<int32_t> rows;
    for (size_t i = 0; i < batch.size(); ++i)
        if (batch[i].logits) rows.push_back(int32_t(i));
    const size_t n_wanted = rows.size();
    if (rows.empty()) rows.push_back(int32_t(n - 1));  // a plan computes at least one row; it is not returned
    if (pipeline_ && pipeline_->leads()) {
        PipelineMessage m;
        m.put(int64_t(PipelineCommand::Decode)).put(engine_id_).put(embedding ? 1 : 0).put(n);
        for (const BatchToken& bt : batch) m.put(bt.seq).put(bt.token).put(bt.logits ? 1 : 0);
        tell(m);
    }
    // The embedding output is the last stage's; the stages before plan as for logits.
    BoundPlan& bp = bound(n, int64_t(rows.size()), embedding && (!stage_ || stage_->last()));
    prepare_blocks(batch, positions);
    fill_inputs(bp, batch, positions, rows);
    exchange_activations(bp, n, true);
    executor_.run(bp.steps);
    exchange_activations(bp, n, false);

    for (size_t i = 0; i < batch.size(); ++i) {
        Sequence& s = sequences_[size_t(batch[i].seq)];
        s.tokens.push_back(batch[i].token);
        s.length = positions[i] + 1;
    }
    for (const auto& [seq, end] : next) register_full_blocks(sequences_[size_t(seq)]);
    return {&bp, std::move(rows), n_wanted};
}

// The rows asked for of an output (n_outputs, width): the output itself when the graph selected them,
// else gathered from its row per token.
std::span<const float> Engine::read_rows(const Pass& pass, int tensor, int64_t width) {
    const PlanTensor& t = pass.bound->plan.tensors[size_t(tensor)];
    const float* out = reinterpret_cast<const float*>(arena_.data() + t.offset);
    const size_t w = size_t(width);
    if (selects_rows_) return {out, pass.n_wanted * w};
    selected_.resize(pass.n_wanted * w);
    for (size_t r = 0; r < pass.n_wanted; ++r)
        std::copy_n(out + size_t(pass.rows[r]) * w, w, selected_.begin() + std::ptrdiff_t(r * w));
    return selected_;
}

}  // namespace graphrun::graph
