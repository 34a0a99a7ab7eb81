// tests/common/parity_util.h — running llama.cpp (the reference) and the `graphrun` binary from tests.
//
// llama.cpp is node-llama-cpp's prebuilt CPU build, driven by tests/parity/llama_reference.mjs and
// installed by tools/parity-setup.sh into a folder outside the source tree. Tests find that folder
// as $GRAPHRUN_PARITY_DIR, else <folder of the graphrun binary>/parity (i.e. <build dir>/parity).
//
// A parity test reads:
//   auto ref = llama_cpp_greedy(model, prompt, 16);
//   if (!ref) GTEST_SKIP() << parity_harness_missing().value_or("");
//   EXPECT_EQ(graphrun_ids, *ref);
// nullopt means only "not installed"; an installed harness that fails throws, so the test fails.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graphrun::test {

// ---- llama.cpp reference ----

// $GRAPHRUN_PARITY_DIR if set and non-empty, else <dirname of GRAPHRUN_BINARY>/parity.
std::string parity_dir();

// Why the harness cannot be used (not set up, or setup never finished), or nullopt when it is
// installed. The text says which folder was looked at and the command that installs it.
std::optional<std::string> parity_harness_missing();

struct LlamaReference {
    std::vector<int32_t> prompt_ids;  // what llama.cpp evaluated (with BOS for text prompts)
    std::vector<int32_t> greedy_ids;  // greedy continuation, without the end-of-generation token
    bool stopped_at_eos = false;      // generation ended on EOS/EOT before n tokens
    int32_t eos_id = -1;              // the model's EOS token, -1 if it has none
    std::string text;                 // greedy_ids detokenized, as llama.cpp prints them after the prompt
    std::vector<float> top2_gaps;     // with logit_gaps: llama.cpp's best minus second-best logit, per id
};

struct LlamaReferenceOptions {
    int ctx = 0;              // context size; 0: prompt + n
    bool ignore_eos = false;  // keep generating through EOS (the EOS id is then part of greedy_ids)
    bool logit_gaps = false;  // also report top2_gaps (one token per llama.cpp call: slower)
};

// Greedy llama.cpp run from token ids (fed as given, BOS included by the caller). nullopt only when
// the harness is not installed; throws std::runtime_error (with llama.cpp's stderr) on any failure.
std::optional<LlamaReference> llama_cpp_reference(const std::string& model,
                                                  const std::vector<int32_t>& prompt, int n,
                                                  const LlamaReferenceOptions& options = {});
// The same from text: llama.cpp tokenizes it, with BOS when the model asks for one.
std::optional<LlamaReference> llama_cpp_reference_text(const std::string& model, const std::string& prompt,
                                                       int n, const LlamaReferenceOptions& options = {});
// Just the greedy ids of llama_cpp_reference.
std::optional<std::vector<int32_t>> llama_cpp_greedy(const std::string& model,
                                                     const std::vector<int32_t>& prompt, int n);

// ---- processes ----

struct ProcessResult {
    int exit_code = -1;  // the exit status; 128 + signal number when killed by a signal
    std::string out;     // everything written to stdout
    std::string err;     // everything written to stderr
};

// Runs argv[0] (looked up in PATH) with the given arguments, no shell involved, and waits for it.
// extra_env entries ("NAME=value") are added to (or override) this process's environment.
// Throws std::runtime_error if the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::string>& extra_env = {});

// The `graphrun` executable of this build (compile definition GRAPHRUN_BINARY) with these arguments.
ProcessResult run_graphrun(const std::vector<std::string>& args);
// The same with $GRAPHRUN_DATA unset whatever the caller's environment has (the data folder is then the
// checkout the build tree was made from), plus `also_env` ("NAME=value") when given.
ProcessResult run_graphrun_here(const std::vector<std::string>& args, const std::string& also_env = "");

// ---- token ids as text ----

// {1, 403, 407} -> "1,403,407" (as --tokens takes them); separator ", " gives tokenize's spelling.
std::string join_ids(const std::vector<int32_t>& ids, const char* separator = ",");
// The whitespace-separated ids `graphrun --tokens` prints.
std::vector<int32_t> parse_ids(const std::string& text);

}  // namespace graphrun::test
