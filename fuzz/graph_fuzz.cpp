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
#include "graph/random_model.h"
#include "runtime/aligned_buffer.h"
#include "runtime/checked_math.h"
#include "runtime/executor.h"
#include "runtime/kv_cache.h"

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
    if (plan.arena_bytes > kMaxRunBytes || plan.kv.bytes() > kMaxRunBytes) return;
    KvCache kv(plan.kv.n_layer, plan.kv.n_ctx, plan.kv.row);
    AlignedBuffer arena(plan.arena_bytes, graph::kArenaAlignment);
    const std::vector<Step> steps = graph::bind_plan(plan, arena.data(), kv);
    for (size_t i = 0; i < g.inputs.size(); ++i) {
        auto* in = reinterpret_cast<int32_t*>(arena.data() + plan.tensors[plan.input_tensors[i]].offset);
        for (int64_t t = 0; t < plan.n_tokens; ++t) in[t] = g.inputs[i].name == "tokens" ? int32_t(t * 7 % 320) : int32_t(t);
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
