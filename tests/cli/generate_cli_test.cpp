// tests/cli/generate_cli_test.cpp — `graphrun --profile --trace FILE`: the profile of the prompt and the
// decode steps on stderr, the Chrome trace in FILE, and an unwritable trace path refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

// Wide enough that every matmul splits into ranges on 2 threads (grain 16-32 weight rows).
std::string profile_model_file() {
    return testing::random_model_file(testing::spec_of(128, 2, 4, 2, 256, 320, 3), "profile_model");
}

TEST(GenerateCli, ProfileAndTraceOfPromptAndDecode) {
    const std::string trace = (testing::test_temp_dir() / "cli_trace.json").string();
    auto r = test::run_graphrun({"-m", profile_model_file(), "--tokens", "1,5,9", "-n", "4", "-t", "2",
                                 "--profile", "--trace", trace});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, HasSubstr("profile 'prompt': 1 runs"));
    EXPECT_THAT(r.err, HasSubstr("profile 'decode': 3 runs"));
    EXPECT_EQ(test::parse_ids(r.out).size(), 4u);  // stdout still holds only the ids
    std::ifstream in(trace);
    EXPECT_TRUE(nlohmann::json::parse(in).contains("traceEvents"));

    r = test::run_graphrun(
        {"-m", profile_model_file(), "--tokens", "1", "-n", "2", "--trace", "/nonexistent/x.json"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--trace: cannot write '/nonexistent/x.json'"));
}

}  // namespace
}  // namespace graphrun
