// tests/test_models.h — small model files for engine tests, written once per test binary run.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include "graph/random_model.h"

namespace graphrun::testing {

// Writes (once) a random Llama of the given shape into the temp folder and returns its path.
inline std::string random_model_file(const graph::RandomLlamaSpec& spec, const std::string& name) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("graphrun_test_" + std::to_string(::getpid()) + "_" + name + ".gguf")).string();
    if (!std::filesystem::exists(path)) graph::write_random_llama(spec, path);
    return path;
}

inline graph::RandomLlamaSpec spec_of(int64_t embd, int64_t layers, int64_t heads, int64_t kv_heads, int64_t ff,
                                      int64_t vocab = 320, uint64_t seed = 7) {
    graph::RandomLlamaSpec spec;
    spec.n_embd = embd;
    spec.n_layers = layers;
    spec.n_heads = heads;
    spec.n_kv_heads = kv_heads;
    spec.n_ff = ff;
    spec.n_vocab = vocab;
    spec.seed = seed;
    return spec;
}

inline std::string shared_dir() { return std::string(GRAPHRUN_SOURCE_DIR) + "/../shared"; }

}  // namespace graphrun::testing
