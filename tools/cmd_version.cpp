// tools/cmd_version.cpp — `graphrun --version`: what this binary is and what it will use.
//
//   graphrun 0.1.0
//   commit    a5c5715abcde
//   compiler  GCC 12.2.0, C++20, Release build
//   simd      this CPU runs scalar, avx2 (not avx512); kernels use avx2
//   mpi       yes: mpirun -np N graphrun ... runs the layers in N stages
//   data      /usr/share/graphrun (beside the executable /usr/bin/graphrun)
#include <cstdlib>
#include <string>

#include "engine/stage_link.h"
#include "graph/data_files.h"
#include "graphrun_build_info.h"  // GRAPHRUN_COMMIT, written at build time by cmake/build_info.cmake
#include "ops/cpu.h"  // the one CPU-feature dispatcher
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

std::string compiler_line() {
#if defined(__clang__)
    std::string text = "clang " __clang_version__;
#elif defined(__GNUC__)
    std::string text = "GCC " __VERSION__;
#else
    std::string text = "an unknown compiler";
#endif
    text += ", C++" + std::to_string(__cplusplus / 100 % 100) + ", " GRAPHRUN_BUILD_TYPE " build";
#if defined(__SANITIZE_ADDRESS__)
    text += ", AddressSanitizer";
#endif
    return text;
}

std::string simd_line() {
    using ops::SimdLevel;
    std::string runs, missing;
    for (SimdLevel level : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
        std::string& list = ops::simd_level_available(level) ? runs : missing;
        list += std::string(list.empty() ? "" : ", ") + ops::simd_level_name(level);
    }
    std::string text = "this CPU runs " + runs;
    if (!missing.empty()) text += " (not " + missing + ")";
    text += std::string("; kernels use ") + ops::simd_level_name(ops::active_simd_level());
    if (const char* cap = std::getenv("GRAPHRUN_SIMD")) text += std::string(" (GRAPHRUN_SIMD=") + cap + ")";
    return text;
}

std::string data_line() {
    try {
        const graph::DataFolder folder = graph::find_data_folder("models/llama.json");
        return folder.path + " (" + folder.origin + ")";
    } catch (const graph::DataFileError& e) {
        return std::string("none found: ") + e.what();
    }
}

}  // namespace

void register_version(CLI::App& app) {
    app.set_version_flag("--version", [] {
        return std::string("graphrun " GRAPHRUN_VERSION) + "\ncommit    " GRAPHRUN_COMMIT "\ncompiler  " +
               compiler_line() + "\nsimd      " + simd_line() + "\nmpi       " +
               (graph::built_with_mpi() ? "yes: mpirun -np N graphrun ... runs the layers in N stages"
                                        : "no (built without GRAPHRUN_MPI)") +
               "\ndata      " + data_line();
    }, "print the version, commit, compiler, SIMD paths and data folder, and exit");
}

}  // namespace graphrun::tools
