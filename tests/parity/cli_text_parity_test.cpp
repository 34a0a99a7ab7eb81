// tests/parity/cli_text_parity_test.cpp — the command line's greedy story on stories260K is llama.cpp's,
// text for text (the rest of the command line's text mode is tests/cli/cli_text_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;

TEST(CliText, GreedyStoryEqualsLlamaCpps) {
    REQUIRE_STORIES();
    const std::string prompt = "Once upon a time";
    auto ref = test::llama_cpp_reference_text(testing::stories_model(), prompt, 100);
    if (!ref) GTEST_SKIP() << test::parity_harness_missing().value_or("llama.cpp reference not installed");
    test::ProcessResult r =
        test::run_graphrun({"-m", testing::stories_model(), "-p", prompt, "-n", "100", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // stdout carries the prompt and the generated text only; timings went to stderr.
    EXPECT_EQ(r.out, prompt + ref->text + "\n");
    EXPECT_THAT(r.err, AllOf(HasSubstr("tok/s"), HasSubstr("ms/token")));
    EXPECT_THAT(r.out, HasSubstr("there was a little girl named Lily"));
}

}  // namespace
}  // namespace graphrun
