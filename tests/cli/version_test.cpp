// tests/cli/version_test.cpp — what `graphrun --version` says: version, commit, compiler, SIMD level
// (and its GRAPHRUN_SIMD cap), and the data folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/parity_util.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kSource = GRAPHRUN_SOURCE_DIR;

// The build tree's graphrun, with $GRAPHRUN_DATA unset whatever the caller's environment has.
test::ProcessResult run_graphrun_here(const std::vector<std::string>& args, const std::string& also_env = "") {
    std::vector<std::string> argv{GRAPHRUN_BINARY}, env{"GRAPHRUN_DATA="};
    argv.insert(argv.end(), args.begin(), args.end());
    if (!also_env.empty()) env.push_back(also_env);
    return test::run_process(argv, env);
}

TEST(Version, NamesVersionCommitCompilerSimdAndData) {
    test::ProcessResult r = run_graphrun_here({"--version"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("graphrun "));
    // Built from a git checkout, the commit is known; from a tarball it is "unknown".
    // (gtest's regex, not std::regex: GCC 12 warns inside <regex> under the sanitizers.)
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\ncommit +([0-9a-f]{12}|unknown)( \\(with uncommitted changes\\))?\n"));
    if (fs::exists(kSource / ".git")) {
        EXPECT_THAT(r.out, Not(HasSubstr("\ncommit    unknown")));
    }
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\ncompiler +(GCC|clang) "));
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\nsimd +this CPU runs scalar.*; kernels use (scalar|avx2|avx512)"));
    EXPECT_THAT(r.out, HasSubstr("\ndata      " + kSource.string() + " (the checkout the build tree"));
}

TEST(Version, SimdCapIsShown) {
    test::ProcessResult r = run_graphrun_here({"--version"}, "GRAPHRUN_SIMD=scalar");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("kernels use scalar (GRAPHRUN_SIMD=scalar)"));
}

}  // namespace
}  // namespace graphrun
