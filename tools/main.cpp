// tools/main.cpp — the `graphrun` command line: generation by default, plus subcommands.
#include <cstdio>
#include <exception>
#include <new>

#include "tools/commands.h"

int main(int argc, char** argv) {
    CLI::App app{"graphrun: a graph-based Llama inference engine for CPUs"};
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
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graphrun: %s\n", e.what());
        return 1;
    }
    return 0;
}
