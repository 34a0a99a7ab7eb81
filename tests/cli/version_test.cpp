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

using test::run_graphrun_here;

TEST(Version, NamesVersionCommitCompilerSimdAndData) {
    test::ProcessResult r = run_graphrun_here({"--version"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("graphrun "));
    // Built from a git checkout, the commit is known; from a tarball it is "unknown".
    // (gtest's regex, not std::regex: GCC 12 warns inside <regex> under the sanitizers.)
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\ncommit +([0-9a-f]{12}|unknown)( \\(with uncommitted changes\\))?\n"));
    if (fs::exists(fs::path(GRAPHRUN_SOURCE_DIR) / ".git")) {
        EXPECT_THAT(r.out, Not(HasSubstr("\ncommit    unknown")));
    }
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\ncompiler +(GCC|clang) "));
    EXPECT_THAT(r.out, ::testing::ContainsRegex("\nsimd +this CPU runs scalar.*; kernels use (scalar|avx2|avx512)"));
    EXPECT_THAT(r.out, HasSubstr("\ndata      " + fs::path(GRAPHRUN_SOURCE_DIR).string() +
                                 " (the checkout the build tree"));
}

TEST(Version, SimdCapIsShown) {
    test::ProcessResult r = run_graphrun_here({"--version"}, "GRAPHRUN_SIMD=scalar");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("kernels use scalar (GRAPHRUN_SIMD=scalar)"));
}

}  // namespace
}  // namespace graphrun
