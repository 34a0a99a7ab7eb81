// tests/cli/output_path_cli_test.cpp — `quantize` and `make-model` with a bad output path: refused before
// any work, and an interrupted `quantize` leaves no temporary behind (runtime/output_file.h, whose own
// tests are tests/runtime/output_file_test.cpp).
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

extern char** environ;

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using testing::contents;
using testing::fresh_dir;
using testing::names_in;
using testing::write_text;

graph::RandomLlamaSpec many_tensors_spec() { return testing::spec_of(32, 16, 4, 2, 64); }

TEST(OutputPathCli, QuantizeAndMakeModelRefuseBadOutputsBeforeAnyWork) {
    const std::string in = testing::random_model_file(many_tensors_spec(), "outputs_in");
    const fs::path dir = fresh_dir("cli");
    write_text(dir / "target", "target bytes");
    fs::create_symlink(dir / "target", dir / "link.gguf");
    fs::create_directory(dir / "folder.gguf");
    write_text(dir / "readonly.gguf", "protected");
    ASSERT_EQ(::chmod((dir / "readonly.gguf").c_str(), 0444), 0);

    for (const char* name : {"link.gguf", "folder.gguf", "readonly.gguf"}) {
        const std::string out = (dir / name).string();
        test::ProcessResult q = test::run_graphrun({"quantize", in, out, "q8_0"});
        EXPECT_EQ(q.exit_code, 1) << name;
        EXPECT_THAT(q.err, HasSubstr("graphrun: " + out + ": ")) << name;
        EXPECT_THAT(q.err, ::testing::Not(HasSubstr("quantize ["))) << name << ": it started converting";
        test::ProcessResult m = test::run_graphrun({"make-model", out});
        EXPECT_EQ(m.exit_code, 1) << name;
        EXPECT_THAT(m.err, HasSubstr(out + ": ")) << name;
    }
    test::ProcessResult dev = test::run_graphrun({"quantize", in, "/dev/null", "q8_0"});
    EXPECT_EQ(dev.exit_code, 1);
    EXPECT_THAT(dev.err, HasSubstr("/dev/null: is a character device"));
    EXPECT_EQ(contents(dir / "target"), "target bytes");
    EXPECT_EQ(contents(dir / "readonly.gguf"), "protected");
    EXPECT_TRUE(fs::is_directory(dir / "folder.gguf"));
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"folder.gguf", "link.gguf", "readonly.gguf", "target"}));
}

// Ctrl-C in the middle of `quantize`: its stderr is a pipe of one page that this test stops
// reading after the first progress line, so the process blocks mid-write, with its temporary on
// disk, until SIGINT arrives. Then the temporary is gone and OUT was never created.
TEST(OutputPathCli, InterruptedQuantizeLeavesNothingBehind) {
    const std::string in = testing::random_model_file(many_tensors_spec(), "outputs_in");
    const fs::path dir = fresh_dir("interrupt");
    const std::string out = (dir / "out.gguf").string();

    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    ASSERT_GT(::fcntl(pipe_fds[1], F_SETPIPE_SZ, 4096), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    std::vector<std::string> args = {GRAPHRUN_BINARY, "quantize", in, out, "q8_0"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    ASSERT_EQ(::posix_spawn(&pid, GRAPHRUN_BINARY, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);

    std::string first;  // up to the first progress line: the temporary exists from here on
    char c;
    while (first.find('\n') == std::string::npos && ::read(pipe_fds[0], &c, 1) == 1) first += c;
    EXPECT_THAT(first, HasSubstr("quantize ["));
    bool temporary_seen = false;
    for (int i = 0; i < 200 && !temporary_seen; ++i) {
        for (const std::string& name : names_in(dir)) temporary_seen |= name.rfind("out.gguf.tmp.", 0) == 0;
        if (!temporary_seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(temporary_seen);
    ::kill(pid, SIGINT);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(pipe_fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status << ": the run was not interrupted";
    EXPECT_EQ(WTERMSIG(status), SIGINT);
    EXPECT_TRUE(names_in(dir).empty()) << "left behind: " << names_in(dir).front();
}

}  // namespace
}  // namespace graphrun
