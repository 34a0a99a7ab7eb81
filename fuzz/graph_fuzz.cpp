// fuzz/graph_fuzz.cpp — graph files on arbitrary text: load, bind against a small random Llama,
// plan, and (when small) run the plan once on one thread.
//
// The model is written once at start-up (16 wide, 2 layers, 320 tokens, F32). A graph that binds
// and plans is executed with valid token ids and positions: the planner's shape inference is what
// stands between a hostile graph and the kernels, so a graph that plans must run without a memory
// error. Only GraphError, PlanError, SizeError and GgufError (wrapped into GraphError) may escape.
#include <cstdint>
#include <filesystem>
#include <string>

#include "fuzz/fuzz_util.h"
#include "graph/graph.h"
#include "graph/plan.h"
#include "tools/lib/random_model.h"
#include "runtime/aligned_buffer.h"
#include "runtime/checked_math.h"
#include "runtime/executor.h"

namespace {

using namespace graphrun;

constexpr int64_t kCtx = 16;
constexpr int64_t kMaxRunBytes = int64_t(64) << 20;  // plans needing more are planned, not run

const GgufFile& small_model() {
    static const std::shared_ptr<const GgufFile> model = [] {
        graph::RandomLlamaSpec spec;  // the teaching size: 16 wide, 2 layers, 4 heads (2 kv), 320 tokens
        const std::string path = (std::filesystem::temp_directory_path() /
                                  ("graphrun_graph_fuzz_" + std::to_string(::getpid()) + ".gguf")).string();
        graph::write_random_llama(spec, path);
        auto file = GgufFile::open(path);
        std::filesystem::remove(path);  // the mapping keeps it
        return file;
    }();
    return *model;
}

void run_once(const graph::Graph& g, const graph::Plan& plan) {
    if (plan.arena_bytes > kMaxRunBytes || plan.state_bytes > kMaxRunBytes) return;
    AlignedBuffer arena(plan.arena_bytes, graph::kArenaAlignment);
    std::vector<AlignedBuffer> state;
    std::vector<void*> state_ptrs;
    for (int id : plan.state_tensors) {
        state.emplace_back(plan.tensors[size_t(id)].bytes, graph::kArenaAlignment);
        state_ptrs.push_back(state.back().data());
    }
    const std::vector<Step> steps = graph::bind_plan(plan, arena.data(), state_ptrs);
    // One sequence at positions 0 .. n_tokens-1 in block 0 (slot = position), logits for the last token.
    for (size_t i = 0; i < g.inputs.size(); ++i) {
        const graph::PlanTensor& t = plan.tensors[size_t(plan.input_tensors[i])];
        auto* in = reinterpret_cast<int32_t*>(arena.data() + t.offset);
        for (int64_t k = 0; k < t.desc.n_elements(); ++k)
            switch (g.inputs[i].kind) {
                case graph::InputKind::Tokens:
                    in[k] = int32_t(k * 7 % 320);
                    break;
                case graph::InputKind::KvTable:
                    in[k] = 0;
                    break;
                case graph::InputKind::LogitRows:
                    in[k] = int32_t(plan.n_tokens - 1);
                    break;
                default:
                    in[k] = int32_t(k);
            }
    }
    static Executor executor(1);
    executor.run(steps);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const GgufFile& model = small_model();
    try {
        const graph::GraphFile file =
            graph::graph_file_from_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
        const graph::Graph g = graph::bind_graph(file, model);
        for (int64_t n_tokens : {1, 3}) {
            const graph::Plan plan = graph::make_plan(g, n_tokens, kCtx);
            run_once(g, plan);
        }
    } catch (const graph::GraphError&) {
    } catch (const ops::PlanError&) {
    } catch (const SizeError&) {
    } catch (const std::exception& e) {
        fuzz::undocumented(e);
    }
    return 0;
}
