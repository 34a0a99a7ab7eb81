// tests/common/test_models.h — small model files for engine tests, written once per test binary run.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "engine/model.h"
#include "tools/lib/random_model.h"

namespace graphrun::testing {

// A folder of this test process's own in the temp folder, removed with everything in it at exit
// (ctest runs every test in a process of its own, so nothing is shared or left behind).
inline const std::filesystem::path& test_temp_dir() {
    struct Folder {
        std::filesystem::path path =
            std::filesystem::temp_directory_path() / ("graphrun_test_" + std::to_string(::getpid()));
        Folder() { std::filesystem::create_directories(path); }
        ~Folder() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    };
    static const Folder folder;
    return folder.path;
}

// The shipped model (models/kjv-q8_0.gguf), loaded once per test binary.
inline std::shared_ptr<const graph::Model> kjv_model() {
    static const auto model = graph::Model::load(std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf");
    return model;
}

// Writes (once) a random Llama of the given shape into test_temp_dir() and returns its path.
inline std::string random_model_file(const graph::RandomLlamaSpec& spec, const std::string& name) {
    const std::string path = (test_temp_dir() / (name + ".gguf")).string();
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

// A folder of this test's own, so "no temporary left" can be checked by listing it.
inline std::filesystem::path fresh_dir(const std::string& name) {
    const std::filesystem::path dir = testing::test_temp_dir() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

inline std::string contents(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_text(const std::filesystem::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

inline std::string shared_dir() { return std::string(GRAPHRUN_SOURCE_DIR) + "/../shared"; }
// The TinyStories Llama in ../shared (tests that need it skip without it).
inline std::string stories_model() {
    return shared_dir() + "/models/stories260K.gguf";
}

// A token sequence drawn uniformly from the vocabulary, the same for the same seed.
inline std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, n_vocab - 1);
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = pick(rng);
    return ids;
}

// Largest |a - b| relative to the largest |b| (for comparing rows of logits).
inline double max_relative_error(std::span<const float> a, std::span<const float> b) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < a.size(); ++i) {
        worst = std::max(worst, double(std::abs(a[i] - b[i])));
        scale = std::max(scale, double(std::abs(b[i])));
    }
    return worst / scale;
}

}  // namespace graphrun::testing

// Skips the test, saying why, where ../shared has no stories260K.gguf (a clone outside the work area).
#define REQUIRE_STORIES()                                                                   \
    if (!std::filesystem::exists(graphrun::testing::stories_model()))                       \
    GTEST_SKIP() << "needs " << graphrun::testing::stories_model()                          \
                 << " (the shared folder beside the checkout)"
