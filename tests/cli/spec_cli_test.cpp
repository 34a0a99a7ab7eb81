// tests/cli/spec_cli_test.cpp — `graphrun --spec lookup`: the same stdout as without, greedy and seeded, the
// counts on stderr, and the options refused where they make no sense.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kShipped = std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf";
const std::string kRepeated =
    "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n"
    "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n"
    "And God said, Let there be light: and there was light. And God saw";

// The counts of the stderr line "speculative (lookup): P tokens proposed, A accepted ..."; -1 without it.
struct Counts {
    long long proposed = -1, accepted = -1;
};
Counts counts_of(const std::string& err) {
    std::smatch m;
    const std::regex line(R"(speculative \(lookup\): (\d+) tokens proposed, (\d+) accepted)");
    if (!std::regex_search(err, m, line)) return {};
    return {std::stoll(m[1]), std::stoll(m[2])};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

TEST(SpecCli, LookupPrintsWhatPlainDecodingPrints) {
    for (const std::vector<std::string>& sampling :
         {std::vector<std::string>{"--temp", "0"},
          std::vector<std::string>{"--temp", "0.8", "--seed", "42"}}) {
        const std::vector<std::string> base =
            with({"-m", kShipped, "-p", kRepeated, "-n", "64", "-t", "2"}, sampling);
        const auto plain = test::run_graphrun(base);
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        EXPECT_THAT(plain.err, Not(HasSubstr("speculative")));
        const auto spec = test::run_graphrun(with(base, {"--spec", "lookup"}));
        ASSERT_EQ(spec.exit_code, 0) << spec.err;
        EXPECT_EQ(spec.out, plain.out);
        EXPECT_GT(counts_of(spec.err).accepted, 0) << spec.err;
        EXPECT_THAT(spec.err, HasSubstr("tokens per pass"));
        const auto tuned = test::run_graphrun(
            with(base, {"--spec", "lookup", "--draft-max", "3", "--draft-min", "2", "--lookup-ngram", "4"}));
        ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
        EXPECT_EQ(tuned.out, plain.out);
    }
}

TEST(SpecCli, TokenModeOnARandomModel) {
    const std::string model =
        testing::random_model_file(testing::spec_of(64, 2, 4, 2, 96, 320), "spec_cli_random");
    const std::vector<std::string> base = {"-m", model, "--tokens", "1,7,8,9,7,8,9,7,8", "-n", "40"};
    const auto plain = test::run_graphrun(base);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const auto spec = test::run_graphrun(with(base, {"--spec", "lookup"}));
    ASSERT_EQ(spec.exit_code, 0) << spec.err;
    EXPECT_EQ(test::parse_ids(spec.out), test::parse_ids(plain.out));
    EXPECT_EQ(test::parse_ids(spec.out).size(), 40u);
    EXPECT_GT(counts_of(spec.err).proposed, 0) << spec.err;
}

TEST(SpecCli, BadValuesAreRefusedByName) {
    auto r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "draft"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("'draft' is not a proposer: give off or lookup"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "ngram"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("'ngram' is not a proposer"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--draft-max", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--draft-max tunes speculative decoding: give --spec lookup too"));
    r = test::run_graphrun(
        {"-m", kShipped, "-p", "In", "--spec", "lookup", "--draft-min", "5", "--draft-max", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--draft-min"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "lookup", "--draft-max", "0"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--draft-max"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "lookup", "--conversation"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("not --conversation"));
}

}  // namespace
}  // namespace graphrun
