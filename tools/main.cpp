// tools/main.cpp — the `graphrun` command line: generation by default, plus subcommands.
#include <cstdio>
#include <exception>

#include "tools/commands.h"

int main(int argc, char** argv) {
    CLI::App app{"graphrun: a graph-based Llama inference engine for CPUs"};
    app.require_subcommand(0, 1);
    graphrun::tools::register_generate(app);
    graphrun::tools::register_inspect(app);
    graphrun::tools::register_make_model(app);
    graphrun::tools::register_quantize(app);
    graphrun::tools::register_tokenize(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "graphrun: %s\n", e.what());
        return 1;
    }
    return 0;
}
