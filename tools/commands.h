// tools/commands.h — the subcommands of the `graphrun` executable.
// Each register_* adds its options and a callback to the app; errors are thrown as exceptions
// and main prints them as one line on stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace graphrun::graph {
class Pipeline;
}

namespace graphrun::tools {

// The pipeline this process is rank 0 of under `mpirun -np N` (engine/pipeline.h); nullptr when
// graphrun runs alone. Generation, batched and serve load their model over it.
graph::Pipeline* process_pipeline();

// The default command (no subcommand): plan and run a graph on a model, print tokens or text.
void register_generate(CLI::App& app);
void register_bench(CLI::App& app);
void register_inspect(CLI::App& app);
void register_make_model(CLI::App& app);
void register_perplexity(CLI::App& app);
void register_quantize(CLI::App& app);
void register_serve(CLI::App& app);  // the HTTP server
void register_tokenize(CLI::App& app);
void register_version(CLI::App& app);  // --version
void register_batched(CLI::App& app);        // many sequences from one prompt or a file of prompts
void register_batch_bench(CLI::App& app);    // static versus continuous batching, measured
void register_batched_bench(CLI::App& app);  // prompt and generation speed over N parallel sequences

// llama.cpp's short options of more than one letter, which CLI11 cannot name (a single dash takes one
// letter, and "-md" would read as -m d), rewritten in argv to their long names before parsing:
// -md is --model-draft. Arguments after "--" are left as they are.
void spell_out_long_aliases(int argc, char** argv);

}  // namespace graphrun::tools
