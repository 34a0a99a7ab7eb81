// tests/cli/tokenize_command_test.cpp — `graphrun tokenize`: ids (and pieces) as llama-tokenize prints
// them, the text from -p, -f FILE or --stdin, read bounded as prompt files are.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "tests/common/tokenizer_test_util.h"

namespace graphrun {
namespace {

using tokenizer_test::kShared;

const std::string kStories = kShared + "/models/stories260K.gguf";

// Runs `graphrun ARGS` and returns what it printed (stdout and stderr) and its exit status.
std::pair<std::string, int> run_graphrun(const std::string& args) {
    FILE* pipe = ::popen((std::string(GRAPHRUN_BINARY) + " " + args + " 2>&1").c_str(), "r");
    std::string out;
    char buf[256];
    while (pipe && std::fgets(buf, sizeof buf, pipe)) out += buf;
    const int status = pipe ? ::pclose(pipe) : -1;
    return {out, status};
}

TEST(TokenizeCommand, PrintsIdsLikeLlamaTokenize) {
    if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " is missing (../shared not present)";
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " -p 'Once upon a time'"),
              std::make_pair(std::string("[1, 403, 407, 261, 378]\n"), 0));
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " -p 'Once upon' --no-bos --show-pieces"),
              std::make_pair(std::string("[403, 407]\n   403 -> ' Once'\n   407 -> ' upon'\n"), 0));
    const auto [err, status] = run_graphrun("tokenize -m " + kStories + ".missing -p x");
    EXPECT_NE(status, 0);
    EXPECT_NE(err.find("stories260K.gguf.missing"), std::string::npos) << err;
}

// -f FILE and --stdin take the text byte for byte (a final newline included), read as prompt files
// are (bounded, never hanging); exactly one source.
TEST(TokenizeCommand, ReadsAFileOrStdinBoundedAsPromptFiles) {
    if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " is missing (../shared not present)";
    const std::string path =
        ::testing::TempDir() + "graphrun_tokenize_" + std::to_string(::getpid()) + ".txt";
    std::ofstream(path, std::ios::binary) << "Once upon a time\n";
    const auto from_prompt = run_graphrun("tokenize -m " + kStories + " -p 'Once upon a time\n'");
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " -f " + path), from_prompt);
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " --stdin < " + path), from_prompt);
    std::remove(path.c_str());
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " --no-bos --stdin < /dev/null"),
              std::make_pair(std::string("[]\n"), 0));

    const auto fails_with = [](const std::string& args, const std::string& message) {
        const auto [out, status] = run_graphrun("tokenize -m " + kStories + " " + args);
        EXPECT_NE(status, 0) << args;
        EXPECT_NE(out.find(message), std::string::npos) << args << ": " << out;
    };
    fails_with("", "give the text once: -p TEXT, -f FILE or --stdin");
    fails_with("-p a --stdin", "give the text once");
    fails_with("-f /dev/zero", "-f /dev/zero: is larger than 16777216 bytes, the limit for text to tokenize");
    fails_with("-f /no/such/file", "-f /no/such/file: cannot open: No such file or directory");
    fails_with("-f /tmp", "-f /tmp: is a directory");
    // A FIFO nobody writes to reads as empty instead of hanging in open().
    const std::string fifo = ::testing::TempDir() + "graphrun_tokenize_fifo_" + std::to_string(::getpid());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(run_graphrun("tokenize -m " + kStories + " -f " + fifo),
              std::make_pair(std::string("[1]\n"), 0));
    std::remove(fifo.c_str());
    fails_with("--stdin < /dev/zero", "--stdin: /dev/stdin: is larger than 16777216 bytes");
}

}  // namespace
}  // namespace graphrun
