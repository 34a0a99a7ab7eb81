// tests/runtime/output_file_test.cpp — what graphrun does with an output path (runtime/output_file.h):
// it creates or replaces a regular file and nothing else, checks before any work, and leaves no
// temporary behind on a failure or a signal. The same through `quantize` and `make-model` is
// tests/cli/output_path_cli_test.cpp.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "runtime/gguf.h"
#include "runtime/output_file.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::contents;
using testing::fresh_dir;
using testing::names_in;
using testing::write_text;

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

}  // namespace
}  // namespace graphrun
