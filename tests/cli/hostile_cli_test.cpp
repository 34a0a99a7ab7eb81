// tests/cli/hostile_cli_test.cpp — the command line under hostile input: option ceilings and their
// messages, special files (FIFOs, /dev/zero), vocabularies that do not match the logits, NaN
// weights at load, and generation that reaches the end of the context.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>

#include "graph/limits.h"
#include "graph/plan.h"
#include "engine/session.h"
#include "tests/common/parity_util.h"
#include "runtime/gguf.h"
#include "runtime/text/tokenizer.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string tiny_model() { return testing::random_model_file(testing::spec_of(16, 1, 4, 2, 48), "hostile_cli_tiny"); }

// graphrun under `timeout`, so a hang fails the test (exit 124) instead of stalling the suite.
test::ProcessResult run_bounded(const std::vector<std::string>& args, int seconds = 30) {
    std::vector<std::string> argv = {"timeout", std::to_string(seconds), GRAPHRUN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
}

TEST(HostileOptions, ValuesAboveTheCeilingsAreRefusedNamingTheOption) {
    const std::string m = tiny_model();
    struct Case {
        std::vector<std::string> args;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {{"-c", "1000000000"}, "--ctx-size: 1000000000 is out of range: give a whole number from 0 to 16777216"},
        {{"-c", "1152921504606846976"}, "--ctx-size: 1152921504606846976 is out of range"},
        {{"-c", "-5"}, "--ctx-size: -5 is out of range"},
        {{"--dump-plan", "--batch", "0"}, "--batch: 0 is out of range: give a whole number from 1 to 65536"},
        {{"--dump-plan", "--batch", "4611686018427387904"}, "--batch: 4611686018427387904 is out of range"},
        {{"-t", "10000"}, "--threads: 10000 is out of range: give a whole number from 0 to"},
        {{"-n", "-2"}, "--n-predict: -2 is out of range: give a whole number from -1 to 16777216"},
        {{"-n", "lots"}, "--n-predict: 'lots' is not a whole number from -1 to 16777216"},
        {{"--top-k", "-1"}, "--top-k: -1 is out of range"},
        {{"--repeat-last-n", "2147483647"}, "--repeat-last-n: 2147483647 is out of range: give a whole number from -1 to 1048576"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args = {"-m", m, "-p", "hi"};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const test::ProcessResult r = run_bounded(args);
        EXPECT_EQ(r.exit_code, 1) << c.expected << "\n" << r.err;
        EXPECT_THAT(r.err, HasSubstr(c.expected));
        EXPECT_THAT(r.err, AllOf(Not(HasSubstr("not in range")), Not(HasSubstr("bad_alloc"))));
        EXPECT_TRUE(r.out.empty()) << r.out;
    }
    // At the batch ceiling itself the plan is made (a dump plans and allocates no arena).
    const test::ProcessResult dump = run_bounded({"-m", m, "--dump-plan", "--batch", "65536", "-c", "4096"});
    EXPECT_EQ(dump.exit_code, 0) << dump.err;
    EXPECT_THAT(dump.out, HasSubstr("4096 positions"));
}

TEST(HostileOptions, AContextLargerThanMemoryIsRefusedBeforeAllocating) {
    // 16 layers x 64-float KV rows: 4 KiB per position, 64 GiB at the -c ceiling.
    const std::string m = testing::random_model_file(testing::spec_of(64, 16, 4, 4, 64), "hostile_cli_deep");
    auto model = graph::Model::load(m);
    const int64_t needed = graph::make_plan(model->graph(), 1, graph::kMaxContext).state_bytes;
    if (graph::physical_memory_bytes() == 0 || graph::physical_memory_bytes() >= needed)
        GTEST_SKIP() << "this machine has " << graph::physical_memory_bytes() << " bytes, the test needs less than "
                     << needed;
    const test::ProcessResult r = run_bounded({"-m", m, "-p", "hi", "-n", "1", "-c", "16777216"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, AllOf(HasSubstr("-c 16777216: the KV cache would take " + std::to_string(needed) + " bytes"),
                             HasSubstr("16 layers x 16777216 positions x 64"), HasSubstr("bytes of memory")));
}

TEST(HostileFiles, FifosAndDevicesNeitherHangNorExhaustMemory) {
    const std::string m = tiny_model();
    const std::string fifo = (testing::test_temp_dir() / "hostile.fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);

    const test::ProcessResult model = run_bounded({"-m", fifo, "-p", "hi"});
    EXPECT_EQ(model.exit_code, 1) << "exit 124 is a hang";
    EXPECT_THAT(model.err, AllOf(HasSubstr(fifo + ": not a regular file"), HasSubstr("memory-mapped")));
    const test::ProcessResult inspect = run_bounded({"inspect", fifo});
    EXPECT_EQ(inspect.exit_code, 1);
    EXPECT_THAT(inspect.err, HasSubstr(fifo + ": not a regular file"));
    const test::ProcessResult graph = run_bounded({"-m", m, "--graph", fifo, "-p", "hi"});
    EXPECT_EQ(graph.exit_code, 1);  // nobody writes to it: it reads as empty, which is not JSON
    EXPECT_THAT(graph.err, HasSubstr(fifo + ": not valid JSON"));
    const test::ProcessResult prompt = run_bounded({"-m", m, "-f", fifo});
    EXPECT_EQ(prompt.exit_code, 1);
    EXPECT_THAT(prompt.err, HasSubstr("nothing to generate from"));

    const test::ProcessResult zero_graph = run_bounded({"-m", m, "--graph", "/dev/zero", "-p", "hi"});
    EXPECT_EQ(zero_graph.exit_code, 1);
    EXPECT_THAT(zero_graph.err, HasSubstr("/dev/zero: is larger than 16777216 bytes, the limit for a graph file"));
    const test::ProcessResult zero_prompt = run_bounded({"-m", m, "-f", "/dev/zero"});
    EXPECT_EQ(zero_prompt.exit_code, 1);
    EXPECT_THAT(zero_prompt.err, HasSubstr("-f: /dev/zero: is larger than 16777216 bytes, the limit for a prompt file"));
    const test::ProcessResult dir_graph = run_bounded({"-m", m, "--graph", testing::test_temp_dir().string()});
    EXPECT_EQ(dir_graph.exit_code, 1);
    EXPECT_THAT(dir_graph.err, HasSubstr("is a directory"));
}

// A copy of `in` with `edit` applied to its metadata and tensors written as they were.
std::string rewritten(const std::string& in, const std::string& name,
                      const std::function<void(const std::string& key, const GgufValue& v, GgufWriter& w)>& edit) {
    auto file = GgufFile::open(in);
    GgufWriter w;
    for (const auto& [key, value] : file->metadata()) edit(key, value, w);
    for (const GgufTensor& t : file->tensors()) w.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
    const std::string path = (testing::test_temp_dir() / (name + ".gguf")).string();
    w.write(path);
    return path;
}

TEST(HostileModels, AVocabularySmallerThanTheLogitsIsRefusedAtLoad) {
    // 320 rows of output.weight, 300 tokens in the vocabulary: ids 300..319 could be sampled.
    const std::string short_vocab = rewritten(tiny_model(), "hostile_short_vocab", [](const std::string& key, const GgufValue& v, GgufWriter& w) {
        if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.scores" || key == "tokenizer.ggml.token_type") {
            GgufValue cut = v;
            cut.array.resize(300);
            w.set(key, cut);
        } else {
            w.set(key, v);
        }
    });
    const test::ProcessResult r = run_bounded({"-m", short_vocab, "-p", "hello", "-n", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(short_vocab + ": the vocabulary has 300 tokens but the logits are 320 wide"));
    EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(HostileModels, CheckWeightsFindsNaNAtLoad) {
    auto file = GgufFile::open(tiny_model());
    GgufWriter w;
    for (const auto& [key, value] : file->metadata()) w.set(key, value);
    std::vector<uint8_t> norm;
    for (const GgufTensor& t : file->tensors()) {
        if (t.name != "blk.0.attn_norm.weight") {
            w.add_tensor(t.name, t.type, t.ne, t.data, t.nbytes);
            continue;
        }
        norm.assign(t.data, t.data + t.nbytes);
        const float nan = std::nanf("");
        std::memcpy(norm.data() + 4 * 5, &nan, 4);
        w.add_tensor(t.name, t.type, t.ne, norm.data(), norm.size());
    }
    const std::string path = (testing::test_temp_dir() / "hostile_nan.gguf").string();
    w.write(path);
    const test::ProcessResult checked = run_bounded({"-m", path, "--tokens", "1,2", "-n", "2", "--check-weights"});
    EXPECT_EQ(checked.exit_code, 1);
    EXPECT_THAT(checked.err, HasSubstr(path + ": --check-weights: tensor 'blk.0.attn_norm.weight' has NaN at element 5"));
    const test::ProcessResult clean = run_bounded({"-m", tiny_model(), "--tokens", "1,2", "-n", "2", "--check-weights"});
    EXPECT_EQ(clean.exit_code, 0) << clean.err;
}

TEST(HostileContext, GenerationThatReachesTheContextSaysSo) {
    const std::string m = tiny_model();
    // 3 prompt tokens in 8 positions: the 6th generated token has no room to be evaluated.
    const test::ProcessResult cut = run_bounded({"-m", m, "--tokens", "1,2,3", "-c", "8", "-n", "20"});
    EXPECT_EQ(cut.exit_code, 0) << cut.err;
    EXPECT_EQ(test::parse_ids(cut.out).size(), 6u);
    EXPECT_THAT(cut.err, HasSubstr("stopped at the end of the context (8 positions); raise -c for more"));
    const test::ProcessResult exact = run_bounded({"-m", m, "--tokens", "1,2,3", "-c", "8", "-n", "6"});
    EXPECT_EQ(test::parse_ids(exact.out).size(), 6u);
    EXPECT_THAT(exact.err, Not(HasSubstr("stopped at the end of the context")));
}

// ---- interactive mode ----

// graphrun -i with `lines` on stdin.
test::ProcessResult run_interactive(const std::vector<std::string>& args, const std::string& lines) {
    const std::string input = (testing::test_temp_dir() / "interactive_input.txt").string();
    std::ofstream(input, std::ios::binary) << lines;
    std::string command = "exec timeout 60 " + std::string(GRAPHRUN_BINARY) + " -i";
    for (const std::string& a : args) command += " '" + a + "'";
    return test::run_process({"/bin/sh", "-c", command + " < " + input});
}

// The second turn continues from everything the first one printed: its last token was fed to the
// model first (it used to be printed only, so turn 2 went on as if it had never been said).
TEST(HostileInteractive, EachReplysLastTokenIsEvaluatedBeforeTheNextTurn) {
    if (!std::filesystem::exists(testing::stories_model()))
        GTEST_SKIP() << "needs " << testing::stories_model();
    // Turn 1 ends "... a little girl"; without that last " girl", turn 2 ("little") would go on
    // " girl named Lily"; with it, it goes " boy named Tim".
    constexpr int kReply = 8;
    const test::ProcessResult r =
        run_interactive({"-m", testing::stories_model(), "-n", std::to_string(kReply), "--temp", "0"},
                        "Once upon a time\nlittle\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;

    // The same two turns by hand: greedy tokens, every printed one evaluated before the next line.
    auto model = graph::Model::load(testing::stories_model());
    const Tokenizer tokenizer = Tokenizer::from_gguf(model->file());
    graph::Session session(model);
    auto greedy_reply = [&](std::vector<int32_t> prompt) {
        std::span<const float> logits = session.eval(prompt);
        TokenTextStream text(tokenizer);
        std::string out;
        std::vector<int32_t> reply;
        for (int k = 0; k < kReply; ++k) {
            const auto row = logits.subspan(logits.size() - size_t(session.n_vocab()));
            const int32_t id = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
            EXPECT_FALSE(tokenizer.is_end_of_generation(id)) << "the test assumes replies of " << kReply << " tokens";
            out += text.push(id);
            reply.push_back(id);
            if (k + 1 < kReply) logits = session.eval(std::span<const int32_t>(&reply.back(), 1));
        }
        return std::pair(out + text.flush(), reply.back());
    };
    const auto [first, last] = greedy_reply(tokenizer.encode("Once upon a time", tokenizer.add_bos()));
    std::vector<int32_t> second_prompt = {last};
    for (int32_t id : tokenizer.encode("little", false)) second_prompt.push_back(id);
    const std::string second = greedy_reply(second_prompt).first;
    EXPECT_EQ(r.out, "Once upon a time" + first + "\n" + second + "\n");
    EXPECT_THAT(second, HasSubstr(" boy named Tim"));
}

// A full context does not end the session: the reply stops with a notice, the next line goes on
// from the last half of the context, /reset empties it, and a line too long for any context is
// refused without ending the session either.
TEST(HostileInteractive, AFullContextGoesOnOrResetsInsteadOfExiting) {
    const std::string m = tiny_model();
    std::string long_line;
    for (int i = 0; i < 40; ++i) long_line += "ab ";
    const test::ProcessResult r = run_interactive({"-m", m, "-c", "24", "-n", "40", "--temp", "0"},
                                                  "hello\nthere\n" + long_line + "\n/reset\nagain\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, AllOf(HasSubstr("the context (24 positions) is full; the next line goes on from its last half"),
                             HasSubstr("going on from the last 12 tokens (type /reset to start over)"),
                             HasSubstr("more than the context of 24 holds; type a shorter one"),
                             HasSubstr("the context is empty again")));
    EXPECT_THAT(r.err, Not(HasSubstr("context is full: ")));  // Session::eval's error never reached the user
}

}  // namespace
}  // namespace graphrun
