// tools/cmd_make_model.cpp — `graphrun make-model OUT.gguf [--arch llama|qwen2|qwen3] [--embd N] ...`: a
// random-weight model of the Llama family that graphrun and llama.cpp both load, for tests, parity runs
// and teaching.
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "tools/lib/random_model.h"
#include "runtime/gguf.h"
#include "tools/commands.h"

namespace graphrun::tools {

namespace {

struct MakeModelOptions {
    std::string out;
    std::string type = "f32";
    graph::RandomLlamaSpec spec;
};

void run_make_model(MakeModelOptions& o) {
    o.spec.type = o.type == "f16" ? DType::F16 : DType::F32;
    try {
        graph::write_random_llama(o.spec, o.out);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("make-model: ") + e.what());
    }
    const auto file = GgufFile::open(o.out);  // read back: what we wrote must pass our own checks
    const graph::RandomLlamaSpec& s = o.spec;
    std::printf(
        "wrote %s: %s, n_embd %lld, %lld layers, %lld heads (%lld kv) of %lld, ff %lld, vocab %lld, ctx %lld, "
        "%s%s%s, seed %llu\n",
        o.out.c_str(), s.arch.c_str(), (long long)s.n_embd, (long long)s.n_layers, (long long)s.n_heads,
        (long long)s.n_kv_heads, (long long)s.head_dim(), (long long)s.n_ff, (long long)s.n_vocab,
        (long long)s.n_ctx, o.type.c_str(), s.tied_output ? ", tied output" : "",
        s.rope_freqs ? ", rope_freqs" : "", (unsigned long long)s.seed);
    std::printf("  %zu tensors, %llu bytes of weights, %llu bytes in all\n", file->tensors().size(),
                (unsigned long long)file->tensor_bytes(), (unsigned long long)file->file_size());
}

}  // namespace

void register_make_model(CLI::App& app) {
    auto options = std::make_shared<MakeModelOptions>();
    CLI::App* cmd =
        app.add_subcommand("make-model", "Write a random-weight Llama, Qwen2 or Qwen3 GGUF model (llama.cpp loads it too)");
    graph::RandomLlamaSpec& s = options->spec;
    cmd->add_option("out", options->out, "Output .gguf path")->required();
    cmd->add_option("--arch", s.arch, "Architecture: llama, qwen2 (Q/K/V biases) or qwen3 (QK-norm)")
        ->check(CLI::IsMember(graph::random_model_architectures()))
        ->capture_default_str();
    cmd->add_option("--embd", s.n_embd, "Embedding width (n_embd)")->capture_default_str();
    cmd->add_option("--layers", s.n_layers, "Transformer blocks")->capture_default_str();
    cmd->add_option("--heads", s.n_heads, "Attention heads")->capture_default_str();
    cmd->add_option("--kv-heads", s.n_kv_heads, "Key/value heads (grouped-query attention)")
        ->capture_default_str();
    cmd->add_option("--head-dim", s.key_length,
                    "Head size, written as attention.key_length (0: n_embd / heads)")
        ->capture_default_str();
    cmd->add_option("--ff", s.n_ff, "Feed-forward width")->capture_default_str();
    cmd->add_option("--vocab", s.n_vocab, "Vocabulary size (at least 259)")->capture_default_str();
    cmd->add_option("--ctx", s.n_ctx, "Context length written to the metadata")->capture_default_str();
    cmd->add_flag("--tied", s.tied_output, "No output.weight: the logits reuse token_embd (SmolLM2)");
    cmd->add_flag("--rope-freqs", s.rope_freqs, "llama: write Llama 3.1's rope_freqs.weight factors");
    cmd->add_option("--rope-base", s.rope_base, "RoPE theta base (0: llama 10000, qwen 1000000)")
        ->capture_default_str();
    cmd->add_option("--seed", s.seed, "Random seed (the same seed writes the same file)")
        ->capture_default_str();
    cmd->add_option("--type", options->type, "Type of the weight matrices")
        ->check(CLI::IsMember({"f32", "f16"}))
        ->capture_default_str();
    cmd->callback([options] { run_make_model(*options); });
}

}  // namespace graphrun::tools
