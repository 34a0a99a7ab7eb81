// engine/pipeline.h — one model over several ranks, each running a stage of its layers.
//
//   mpirun -np 2 graphrun -m model.gguf -p "Once upon a time"      # ranks 0 and 1, layers split
//
// Rank 0 runs the command as one process would; every other rank only follows. Each Model loaded
// and each Engine made on rank 0 is loaded and made on every rank too, for that rank's stage of
// the graph (graph/stages.h), and every call that changes an engine (a sequence added, forked,
// truncated or removed, a prefix reused, a batch decoded) is told to every rank before rank 0 runs
// it, so each rank's engine holds the same sequences and block tables (the bookkeeping is
// deterministic) and plans the same batch. A pass then flows down the ranks: rank r receives the
// hidden state of the batch's tokens from rank r - 1 (n_embd floats each), runs its layers and sends
// it on; the last rank sends the rows of logits asked for back to rank 0. The bits are those of one
// process, as each stage computes exactly its nodes of the whole graph.
//
// The commands are messages on tag kCommandTag from rank 0; activations and logits travel on tags
// of their engine. A rank that dies is mpirun's to report (it ends the others); a rank that hangs
// turns into a StageLinkError on the ranks waiting for it (engine/stage_link.h), which ends them all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/stage_link.h"
#include "graph/graph.h"

namespace graphrun::graph {

// A message: 64-bit words and strings, written and read back in the same order.
class PipelineMessage {
  public:
    PipelineMessage() = default;
    explicit PipelineMessage(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
    PipelineMessage& put(int64_t word);
    PipelineMessage& put(const std::string& text);
    int64_t word();  // throws StageLinkError past the end
    std::string text();
    const std::vector<uint8_t>& bytes() const { return bytes_; }

  private:
    std::vector<uint8_t> bytes_;
    size_t read_ = 0;
};

enum class PipelineCommand : int64_t {
    LoadModel = 1,  // id, model path, graph path
    DropModel,      // id
    MakeEngine,     // id, model id, n_ctx, n_seq, kv_blocks, n_threads, max_batch, prefix_cache, simd
    DropEngine,     // id
    AddSequence,    // engine
    Fork,           // engine, from
    ReusePrefix,    // engine, seq, n, tokens...
    RemoveSequence, // engine, seq
    Truncate,       // engine, seq, n
    Decode,         // engine, embedding (0/1), n, (seq, token, logits) x n
    Stop,
};

constexpr int kCommandTag = 1;
inline int activation_tag(int engine) { return 16 + 2 * engine; }
inline int output_tag(int engine) { return 17 + 2 * engine; }

class Pipeline {
  public:
    // `stages`: the --stages layer ranges ("0-10,11-21"), empty to balance by weight bytes.
    Pipeline(std::unique_ptr<StageLink> link, std::string stages);
    ~Pipeline();  // rank 0: tells every other rank to stop
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    int rank() const { return link_->rank(); }
    int n_ranks() const { return link_->n_ranks(); }
    bool leads() const { return rank() == 0; }
    StageLink& link() { return *link_; }
    const std::string& stages() const { return stages_; }

    // Rank 0: sends `m` to every other rank.
    void tell(const PipelineMessage& m);
    // The id of the next model or engine: rank 0 numbers them in the order it makes them, and every
    // rank makes them in that order, so the numbers agree.
    int next_model_id() { return next_model_++; }
    int next_engine_id() { return next_engine_++; }

    // A rank other than 0: carries out rank 0's commands until Stop. A command that fails on this
    // rank where it cannot have failed on rank 0 (a model that does not load here, an engine that
    // does not fit) ends every rank with the message. Returns the line `graphrun` prints at the end:
    // the rank's layers, weight bytes and peak resident set.
    std::string follow();
    // "rank 1 of 2: layers 2-3 of 4, weights 1257216 of 2513664 bytes, peak resident 20639744 bytes":
    // the stage of the last model loaded, and the most this process has held in memory (the weights
    // it touched are in it while mapped).
    std::string summary() const;
    void set_stage(const GraphStage& stage) { stage_ = stage; }

  private:
    std::unique_ptr<StageLink> link_;
    std::string stages_;
    int next_model_ = 0, next_engine_ = 0;
    bool stopped_ = false;
    std::optional<GraphStage> stage_;
};

// The peak of this process's resident set in bytes (VmHWM of /proc/self/status), 0 when unknown.
int64_t peak_resident_bytes();

}  // namespace graphrun::graph
