// bench/grammar_bench.cpp — the grammar mask's cost per token (runtime/text/grammar_vocab.h): one mask
// over the whole vocabulary, for a JSON grammar at three points of an answer, on the shipped model's
// 2048-token vocabulary and on Llama 2's 32000-token SentencePiece vocabulary (../shared/testdata,
// skipped when absent). us/token is the time of one mask, the sampler's extra work per sampled token.
//   graphrun_bench --benchmark_filter=grammar/
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <memory>

#include "runtime/gguf.h"
#include "runtime/text/grammar_vocab.h"
#include "runtime/text/json_schema.h"
#include "runtime/text/tokenizer.h"

namespace graphrun {
namespace {

std::string vocab_path(int which) {
    const std::string src = GRAPHRUN_SOURCE_DIR;
    return which == 0 ? src + "/models/kjv-q8_0.gguf" : src + "/../shared/testdata/tokenizer/ggml-vocab-llama-spm.gguf";
}

std::shared_ptr<const GrammarVocab> vocab(int which) {
    static std::map<int, std::shared_ptr<const GrammarVocab>> cache;
    if (!cache.count(which)) {
        const std::string path = vocab_path(which);
        if (!std::filesystem::exists(path)) return nullptr;
        cache[which] = GrammarVocab::from_tokenizer(Tokenizer::from_gguf(*GgufFile::open(path)));
    }
    return cache[which];
}

const Grammar& person_grammar() {
    static const Grammar g = grammar_parse(json_schema_to_gbnf(
        R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name", "age"]})"));
    return g;
}

// state.range(0): the vocabulary (0 kjv, 1 llama-spm); range(1): the point in the answer.
void BM_GrammarMask(benchmark::State& state) {
    const auto v = vocab(int(state.range(0)));
    if (!v) {
        state.SkipWithError("vocabulary not found (../shared/testdata is absent)");
        return;
    }
    static const char* prefixes[] = {"", R"({"name": "Abra)", R"({"name": "A", "age": 1)"};
    GrammarMatcher m(person_grammar());
    if (!m.accept(prefixes[state.range(1)])) {
        state.SkipWithError("the prefix does not match");
        return;
    }
    std::vector<uint8_t> allowed;
    GrammarMaskScratch scratch;
    for (auto _ : state) {
        v->mask(m, allowed, scratch);
        benchmark::DoNotOptimize(allowed.data());
    }
    size_t n = 0;
    for (const uint8_t a : allowed) n += a;
    state.counters["allowed"] = double(n);
    state.counters["vocab"] = double(v->n_vocab());
    state.counters["trie_nodes"] = double(v->trie_nodes());
    state.counters["us/token"] = benchmark::Counter(double(state.iterations()) * 1e-6,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_GrammarMask)
    ->Name("grammar/mask")
    ->ArgNames({"vocab", "at"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace graphrun
