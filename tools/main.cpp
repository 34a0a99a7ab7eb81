// tools/main.cpp — the `graphrun` command line: generation by default, plus subcommands.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "engine/pipeline.h"
#include "tools/commands.h"

namespace {

std::unique_ptr<graphrun::graph::Pipeline> the_pipeline;

// Takes `--stages RANGES` (or --stages=RANGES) out of argv: it belongs to mpirun's ranks, not to a
// subcommand. Returns it, empty when absent.
std::string take_stages_option(int& argc, char** argv) {
    std::string stages;
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0) {
            while (i < argc) argv[out++] = argv[i++];
            break;
        }
        if (std::strcmp(argv[i], "--stages") == 0) {
            if (i + 1 == argc) throw std::invalid_argument("--stages needs layer ranges, such as 0-10,11-21");
            stages = argv[++i];
        } else if (std::strncmp(argv[i], "--stages=", 9) == 0) {
            stages = argv[i] + 9;
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    return stages;
}

// Under `mpirun -np N`: every rank but 0 follows rank 0's commands (engine/pipeline.h) and returns
// true; rank 0 goes on to run the command line with the pipeline.
bool follow_as_a_stage(int& argc, char** argv) {
    const std::string stages = take_stages_option(argc, argv);
    std::unique_ptr<graphrun::graph::StageLink> link = graphrun::graph::mpi_stage_link();
    if (!link) {
        if (!stages.empty())
            throw std::invalid_argument("--stages " + stages + ": the stages are ranks of mpirun -np N (N > 1)");
        return false;
    }
    the_pipeline = std::make_unique<graphrun::graph::Pipeline>(std::move(link), stages);
    if (the_pipeline->leads()) return false;
    // mpirun passes SIGTERM and SIGINT to every rank; rank 0 drains and then tells this rank to stop.
    std::signal(SIGTERM, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    const std::string line = the_pipeline->follow();
    std::fprintf(stderr, "graphrun: %s\n", line.c_str());
    the_pipeline.reset();
    return true;
}

}  // namespace

namespace graphrun::tools {
graph::Pipeline* process_pipeline() {
    return the_pipeline.get();
}
}  // namespace graphrun::tools

int main(int argc, char** argv) {
    try {
        if (follow_as_a_stage(argc, argv)) return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graphrun: %s\n", e.what());
        return 1;
    }
    CLI::App app{"graphrun: a graph-based Llama inference engine for CPUs"};
    app.footer("Over several processes or machines: mpirun -np N graphrun [--stages 0-10,11-21] [batched|serve] ...\n"
               "runs the model's layers in N stages, one per rank (docs/deploy.md).");
    app.require_subcommand(0, 1);
    graphrun::tools::register_generate(app);
    graphrun::tools::register_bench(app);
    graphrun::tools::register_inspect(app);
    graphrun::tools::register_make_model(app);
    graphrun::tools::register_perplexity(app);
    graphrun::tools::register_quantize(app);
    graphrun::tools::register_serve(app);
    graphrun::tools::register_tokenize(app);
    graphrun::tools::register_version(app);
    graphrun::tools::register_batched(app);
    graphrun::tools::register_batch_bench(app);
    graphrun::tools::register_batched_bench(app);
    graphrun::tools::spell_out_long_aliases(argc, argv);
    app.parse_complete_callback([&app] {
        if (!the_pipeline) return;
        for (const CLI::App* sub : app.get_subcommands())
            if (sub->get_name() != "batched" && sub->get_name() != "serve")
                throw std::invalid_argument("graphrun " + sub->get_name() +
                                            " runs in one process: under mpirun, generation, batched and serve run");
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; a bad option is an error like any other: exit 1
        // (CLI11's own codes, 105 for a failed check and so on, mean nothing to a caller).
        return app.exit(e) == 0 ? 0 : 1;
    } catch (const std::bad_alloc&) {
        // Sizes from options and files are checked before allocating; this is the backstop.
        std::fprintf(stderr, "graphrun: out of memory: this machine cannot hold what the model and options ask for\n");
        return 1;
    } catch (const graphrun::graph::StageLinkError& e) {
        // A rank died or hangs: every rank ends now, the message naming it (not a goodbye to a rank
        // that cannot answer).
        if (the_pipeline) the_pipeline->link().abort_all(e.what());
        std::fprintf(stderr, "graphrun: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graphrun: %s\n", e.what());
        return 1;
    }
    if (the_pipeline) std::fprintf(stderr, "graphrun: %s\n", the_pipeline->summary().c_str());
    return 0;
}
