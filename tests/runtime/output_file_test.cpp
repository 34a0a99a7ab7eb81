// tests/runtime/output_file_test.cpp — what graphrun does with an output path (runtime/output_file.h):
// it creates or replaces a regular file and nothing else, checks before any work, and leaves no
// temporary behind on a failure or a signal; then the same through `quantize` and `make-model`.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/common/parity_util.h"
#include "runtime/gguf.h"
#include "runtime/output_file.h"
#include "tests/common/test_models.h"

extern char** environ;

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// A folder of this test's own, so "no temporary left" can be checked by listing it.
fs::path fresh_dir(const std::string& name) {
    const fs::path dir = testing::test_temp_dir() / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string contents(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string refusal(const std::string& path) {
    try {
        check_output_path(path);
    } catch (const OutputError& e) {
        return e.what();
    }
    return "<no OutputError>";
}

TEST(OutputFile, WritesANewFileAndLeavesNoTemporary) {
    const fs::path dir = fresh_dir("new");
    const std::string out = (dir / "model.gguf").string();
    {
        OutputFile f(out);
        EXPECT_THAT(f.temp_path(), HasSubstr("model.gguf.tmp."));
        f.write("abc", 3);
        f.write_zeros(5000);
        f.commit();
    }
    EXPECT_EQ(contents(out), "abc" + std::string(5000, '\0'));
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"model.gguf"});
}

TEST(OutputFile, ReplacesARegularFileKeepingItsMode) {
    const fs::path dir = fresh_dir("replace");
    const fs::path out = dir / "model.gguf";
    write_text(out, "old bytes");
    ASSERT_EQ(::chmod(out.c_str(), 0640), 0);
    {
        OutputFile f(out.string());
        f.write("new", 3);
        f.commit();
    }
    EXPECT_EQ(contents(out), "new");
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(OutputFile, AFailureBeforeCommitLeavesTheOldFileAndNoTemporary) {
    const fs::path dir = fresh_dir("fail");
    const fs::path out = dir / "model.gguf";
    write_text(out, "precious");
    try {
        OutputFile f(out.string());
        f.write("half a mod", 10);
        throw std::runtime_error("the producer failed");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(contents(out), "precious");
    EXPECT_EQ(names_in(dir), std::vector<std::string>{"model.gguf"});
}

TEST(OutputFile, RefusesEverythingButARegularWritableFile) {
    const fs::path dir = fresh_dir("refuse");
    const fs::path target = dir / "target.gguf";
    write_text(target, "target bytes");
    fs::create_symlink(target, dir / "link.gguf");
    fs::create_symlink(dir / "nowhere.gguf", dir / "dangling.gguf");
    fs::create_directory(dir / "folder.gguf");
    ASSERT_EQ(::mkfifo((dir / "fifo.gguf").c_str(), 0600), 0);
    write_text(dir / "readonly.gguf", "protected");
    ASSERT_EQ(::chmod((dir / "readonly.gguf").c_str(), 0444), 0);

    EXPECT_THAT(refusal((dir / "link.gguf").string()),
                AllOf(HasSubstr("is a symbolic link to '" + target.string() + "'"),
                      HasSubstr("does not write through links")));
    EXPECT_THAT(refusal((dir / "dangling.gguf").string()), HasSubstr("is a symbolic link"));
    EXPECT_THAT(refusal((dir / "folder.gguf").string()), HasSubstr("is a directory"));
    EXPECT_THAT(refusal((dir / "fifo.gguf").string()), HasSubstr("is a FIFO"));
    EXPECT_THAT(refusal("/dev/null"), AllOf(HasSubstr("/dev/null: is a character device"),
                                            HasSubstr("writes only regular files")));
    EXPECT_THAT(refusal((dir / "readonly.gguf").string()), HasSubstr("is read-only"));
    EXPECT_THAT(refusal((dir / "missing" / "x.gguf").string()), HasSubstr("the folder '"));
    EXPECT_THAT(refusal((dir / "folder.gguf").string() + "/"), HasSubstr("names a folder"));
    EXPECT_THAT(refusal(""), HasSubstr("empty"));

    // Nothing was touched, and no temporary was made for any of them.
    EXPECT_THROW(OutputFile((dir / "link.gguf").string()), OutputError);
    EXPECT_EQ(contents(target), "target bytes");
    EXPECT_EQ(contents(dir / "readonly.gguf"), "protected");
    EXPECT_FALSE(fs::exists(dir / "nowhere.gguf"));
    EXPECT_EQ(names_in(dir), (std::vector<std::string>{"dangling.gguf", "fifo.gguf", "folder.gguf", "link.gguf",
                                                       "readonly.gguf", "target.gguf"}));
}

TEST(OutputFile, ALinkPlantedUnderTheTemporaryNameIsNotFollowed) {
    const fs::path dir = fresh_dir("planted");
    const fs::path victim = dir / "victim";
    write_text(victim, "victim bytes");
    const fs::path out = dir / "model.gguf";
    fs::create_symlink(victim, out.string() + ".tmp." + std::to_string(::getpid()));
    {
        OutputFile f(out.string());
        EXPECT_NE(f.temp_path(), out.string() + ".tmp." + std::to_string(::getpid()));
        f.write("model", 5);
        f.commit();
    }
    EXPECT_EQ(contents(victim), "victim bytes");
    EXPECT_EQ(contents(out), "model");
}

TEST(OutputFile, NotEnoughSpaceIsRefusedBeforeWriting) {
    const fs::path dir = fresh_dir("space");
    const std::string out = (dir / "huge.gguf").string();
    try {
        check_output_path(out, uint64_t(1) << 62);
        ADD_FAILURE() << "no error";
    } catch (const OutputError& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("needs 4611686018427387904 bytes"), HasSubstr("free")));
    }
}

// SIGTERM while a file is being written: the handler removes the temporary, then the process dies
// of the signal as it would have without graphrun's handler.
TEST(OutputFile, ASignalRemovesTheTemporary) {
    const fs::path dir = fresh_dir("signal");
    const std::string out = (dir / "model.gguf").string();
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        OutputFile f(out);
        f.write("partial", 7);
        ::kill(::getpid(), SIGTERM);
        ::_exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGTERM);
    EXPECT_TRUE(names_in(dir).empty()) << names_in(dir).front();
}

TEST(GgufWriterOutput, RefusesASymlinkAndLeavesItsTarget) {
    const fs::path dir = fresh_dir("writer_link");
    write_text(dir / "target", "target bytes");
    fs::create_symlink(dir / "target", dir / "out.gguf");
    GgufWriter w;
    w.set_u32("x", 1);
    try {
        w.write((dir / "out.gguf").string());
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), HasSubstr("is a symbolic link"));
    }
    EXPECT_EQ(contents(dir / "target"), "target bytes");
    EXPECT_TRUE(fs::is_symlink(dir / "out.gguf"));
}

// ---- through the command line ----

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
