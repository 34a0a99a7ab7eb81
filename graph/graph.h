// graph/graph.h — a graph definition (models/*.json) bound to a model file's metadata.
//
// A graph file is data: a person edits models/llama.json and the plan changes. Loading happens
// in two steps:
//   load_graph_file(path)      JSON -> GraphFile: structure checked, nothing resolved yet
//   bind_graph(file, metadata) symbols resolved from GGUF metadata, `repeat` blocks unrolled,
//                              every input resolved to a graph input, a weight or an earlier node
// Errors are GraphError and name the file, the node and the field: "models/llama.json: node
// 'blk.0.q' (matmul): input 'attn_inn' is neither a node, a graph input nor a weight".
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/limits.h"
#include "runtime/aligned_buffer.h"
#include "runtime/gguf.h"
#include "runtime/kernel.h"

namespace graphrun::graph {

class GraphError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The parsed file, kept as JSON text pieces until binding (symbols need the model).
struct GraphFile {
    std::string path;
    std::string architecture;  // must equal the model's general.architecture
    std::string json_text;     // whole file, parsed again at bind time (cheap, keeps one parser)
};

// Graph files are small; one longer than kMaxGraphFileBytes (graph/limits.h) is refused unread.
GraphFile load_graph_file(const std::string& path);  // FIFOs and devices: see runtime/bounded_read.h
GraphFile graph_file_from_string(std::string json_text, std::string name);  // for tests
// In the data folder (graph/data_files.h); DataFileError names every place looked in.
std::string default_graph_path();  // models/llama.json, the graph of the shipped model
// The shipped graph for models of this general.architecture: models/<architecture>.json of the data
// folder. Throws GraphError naming the architecture, where it looked and the graphs that exist.
std::string graph_path_for(const std::string& architecture);
std::vector<std::string> graph_architectures();  // the shipped graphs' architectures, sorted
std::string default_model_path();  // models/kjv-q8_0.gguf, the model graphrun ships (models/README.md)

// Where a node input comes from once bound.
struct ValueRef {
    enum class Kind { Input, Weight, Node, State } kind = Kind::Node;
    int index = 0;  // into Graph::inputs, Graph::weights, Graph::nodes or Graph::states
};

// The inputs a session fills before every run, one entry (or row) per token of the batch unless said:
//   tokens      (n_tokens) i32               token ids
//   positions   (n_tokens) i32               each token's position in its sequence
//   kv_slots    (n_tokens) i32               the KV cache row each token's keys and values go to
//   kv_table    (n_tokens, table_width) i32  each token's sequence's block table (runtime/kv_blocks.h)
//   logit_rows  (n_outputs) i32              the batch rows whose logits are read, in order
// A graph declares the ones it reads; any other name is an error (nothing would fill it).
// One more kind is never declared by a file: a pipeline stage's graph (graph/stages.h) reads
//   stage_in    (n_tokens, width) f32          the activations the previous stage sent
enum class InputKind { Tokens, Positions, KvSlots, KvTable, LogitRows, StageIn };
struct InputSpec {
    const char* name;
    InputKind kind;
    const char* about;
};
std::span<const InputSpec> graph_input_specs();

struct GraphInput {
    std::string name;
    InputKind kind = InputKind::Tokens;
    int64_t width = 0;  // StageIn: floats per token
};

// Planned state: memory that outlives a run. The one kind is a KV cache, f16 (n_slots, width), one
// per layer for keys and one for values; the session sizes n_slots (its block pool) and keeps the
// contents between runs. Graphs declare it as {"id": "k_cache", "state": "kv_cache", "width": W}.
struct GraphState {
    std::string name;   // "blk.3.k_cache"
    int64_t width = 0;  // elements per position (n_head_kv * head_dim)
};

struct GraphWeight {
    std::string name;          // the GGUF tensor actually used
    const GgufTensor* tensor;  // into the mapping
    // The tensor's rows repacked at load into its type's packed layout (graph/repack.h), or null: plans
    // at a level with a GEMM for that layout read these bytes, plans at any other level the mapping.
    std::shared_ptr<const AlignedBuffer> packed = nullptr;
};

struct GraphNode {
    std::string name;  // unique: "blk.3.q"; layer nodes get the "blk.N." prefix
    std::string op;    // as written: "matmul", "rmsnorm", ...
    std::vector<ValueRef> inputs;
    OpParams params;
    std::vector<std::string> attributes;  // the attributes the graph set (the op declares them), for dumps
    // Where the node's values came from, added to its plan errors so they name the metadata key or the
    // tensor behind a bad shape: "head_dim = 64 (metadata 'qwen3.attention.key_length')",
    // "input 2 is weight 'rope_freqs.weight'".
    std::vector<std::string> context;
};

// What a pipeline stage's graph is (graph/stages.h): rank `rank` of `n_ranks` runs layers
// [first_layer, last_layer] of n_layer; the first also the nodes before the layers (the embedding),
// the last also those after (the final norm and the logits). A stage but the first reads its
// activations as the input stage_in, `receives` (a node of the whole graph) of width_in floats per
// token; a stage but the last has one output, `sends`, width_out floats per token. The whole graph's
// vocabulary and embedding sizes are kept, for the ranks that plan neither.
struct GraphStage {
    int rank = 0, n_ranks = 1;
    int first_layer = 0, last_layer = 0, n_layer = 0;
    std::string receives, sends;  // "blk.3.ffn_out"; empty for the first / last stage
    int64_t width_in = 0, width_out = 0;
    int64_t n_vocab = 0, n_embd = 0;  // n_embd: 0 when the graph declares no embedding output
    int64_t weight_bytes = 0, whole_weight_bytes = 0;  // this stage's and the whole graph's
    bool first() const { return rank == 0; }
    bool last() const { return rank == n_ranks - 1; }
};

// A bound graph: everything resolved, nodes in definition order (each refers only to earlier ones).
struct Graph {
    std::string source;                     // graph file path, for messages
    std::map<std::string, double> symbols;  // resolved sizes and constants, for the plan dump
    std::vector<GraphInput> inputs;
    std::vector<GraphWeight> weights;
    std::vector<GraphState> states;
    std::vector<GraphNode> nodes;
    std::vector<ValueRef> outputs;  // the first output is the logits
    // The index in `outputs` of the "embedding" output (the hidden state before the output matrix),
    // -1 when the graph declares none; plans keep it only when asked (PlanShape::embedding).
    int embedding_output = -1;
    // Set when this is one stage of a graph cut for a pipeline over ranks (graph/stages.h).
    std::optional<GraphStage> stage;

    const GraphInput* input(InputKind kind) const;  // nullptr when the graph does not read it
};

Graph bind_graph(const GraphFile& file, const GgufFile& model);

}  // namespace graphrun::graph
