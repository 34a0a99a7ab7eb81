// tests/cli/spec_cli_test.cpp — `graphrun --spec lookup` and `--spec draft --model-draft`: the same stdout as
// without, greedy and seeded, the counts on stderr, and the options refused where they make no sense;
// the same for `graphrun batched` (4 sequences), and a draft of another vocabulary refused by batched and serve.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/common/parity_util.h"
#include "tests/common/spec_texts.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::HasSubstr;
using testing::kRepeated;
using ::testing::Not;

const std::string kShipped = std::string(GRAPHRUN_SOURCE_DIR) + "/models/kjv-q8_0.gguf";
// The counts of the stderr line "speculative (<proposer>): P tokens proposed, A accepted ..."; -1 without it.
struct Counts {
    long long proposed = -1, accepted = -1;
};
Counts counts_of(const std::string& err, const std::string& proposer = "lookup") {
    std::smatch m;
    const std::regex line(R"(speculative \()" + proposer + R"(\): (\d+) tokens proposed, (\d+) accepted)");
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

// The shipped model as its own draft: every greedy guess is the target's choice, so greedy decoding
// accepts all; sampled decoding accepts fewer, and both print what plain decoding prints.
TEST(SpecCli, SelfDraftPrintsWhatPlainDecodingPrints) {
    for (const std::vector<std::string>& sampling :
         {std::vector<std::string>{"--temp", "0"},
          std::vector<std::string>{"--temp", "0.8", "--seed", "42"}}) {
        const std::vector<std::string> base =
            with({"-m", kShipped, "-p", "And God said, Let there be light", "-n", "48", "-t", "2"}, sampling);
        const auto plain = test::run_graphrun(base);
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        for (const char* option : {"--model-draft", "-md"}) {
            const auto spec = test::run_graphrun(with(base, {"--spec", "draft", option, kShipped}));
            ASSERT_EQ(spec.exit_code, 0) << spec.err;
            EXPECT_EQ(spec.out, plain.out) << option;
            EXPECT_THAT(spec.err, HasSubstr("draft model " + kShipped));
            const Counts counts = counts_of(spec.err, "draft");
            EXPECT_GT(counts.proposed, 0) << spec.err;
            EXPECT_GT(counts.accepted, 0) << spec.err;
            if (sampling[1] == "0") {
                EXPECT_EQ(counts.accepted, counts.proposed)
                    << "greedy guesses of the target itself: " << spec.err;
            }
        }
    }
}

// A random target and a random draft of another seed and shape: the same vocabulary (random models of one
// size share theirs), unrelated guesses. The ids are plain decoding's all the same.
TEST(SpecCli, UnrelatedDraftPrintsWhatPlainDecodingPrints) {
    const std::string target =
        testing::random_model_file(testing::spec_of(64, 2, 4, 2, 96, 320, 7), "spec_cli_random");
    const std::string draft =
        testing::random_model_file(testing::spec_of(32, 1, 2, 1, 48, 320, 99), "spec_cli_random_draft");
    for (const std::vector<std::string>& sampling :
         {std::vector<std::string>{}, std::vector<std::string>{"--temp", "0.8", "--seed", "3"}}) {
        const std::vector<std::string> base =
            with({"-m", target, "--tokens", "1,7,8,9,7,8,9,7,8", "-n", "40"}, sampling);
        const auto plain = test::run_graphrun(base);
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        const auto spec = test::run_graphrun(with(base, {"--spec", "draft", "--model-draft", draft}));
        ASSERT_EQ(spec.exit_code, 0) << spec.err;
        EXPECT_EQ(test::parse_ids(spec.out), test::parse_ids(plain.out));
        EXPECT_EQ(test::parse_ids(spec.out).size(), 40u);
        const Counts counts = counts_of(spec.err, "draft");
        EXPECT_GT(counts.proposed, 0) << spec.err;
        EXPECT_LT(counts.accepted * 4, counts.proposed)
            << "an unrelated draft guesses right rarely: " << spec.err;
    }
}

TEST(SpecCli, ADraftOfAnotherVocabularyIsRefusedNamingBothFiles) {
    const std::string draft =
        testing::random_model_file(testing::spec_of(32, 1, 2, 1, 48, 320, 99), "spec_cli_random_draft");
    const auto r =
        test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "draft", "--model-draft", draft});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--model-draft " + draft + ": its vocabulary is not the one of " + kShipped +
                                 ": 2048 tokens there and 320 here"));
    EXPECT_EQ(r.out, "");
}

TEST(SpecCli, DraftOptionsAreRefusedWithoutTheirPartner) {
    auto r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "draft"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--spec draft needs the draft model: give --model-draft FILE"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--model-draft", kShipped});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--model-draft is the draft model of --spec draft: give --spec draft too"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "lookup", "-md", kShipped});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--model-draft is the draft model of --spec draft"));
    r = test::run_graphrun(
        {"-m", kShipped, "-p", "In", "--spec", "draft", "--model-draft", kShipped, "--lookup-ngram", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--lookup-ngram tunes --spec lookup, not --spec draft"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--lookup-ngram", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--lookup-ngram tunes --spec lookup: give --spec lookup too"));
    r = test::run_graphrun(
        {"-m", kShipped, "-p", "In", "--spec", "draft", "-md", kShipped, "--conversation"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("not --conversation"));
}

TEST(SpecCli, BadValuesAreRefusedByName) {
    auto r = test::run_graphrun({"-m", kShipped, "-p", "In", "--spec", "ngram"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("'ngram' is not a proposer: give off, lookup or draft"));
    r = test::run_graphrun({"-m", kShipped, "-p", "In", "--draft-max", "4"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err,
                HasSubstr("--draft-max tunes speculative decoding: give --spec lookup or --spec draft too"));
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

TEST(SpecCli, BatchedPrintsWhatPlainBatchedPrints) {
    for (const std::vector<std::string>& sampling :
         {std::vector<std::string>{"--temp", "0"},
          std::vector<std::string>{"--temp", "0.8", "--seed", "42"}}) {
        const std::vector<std::string> base =
            with({"batched", "-m", kShipped, "-p", kRepeated, "--parallel", "4", "-n", "48", "-t", "2"}, sampling);
        const auto plain = test::run_graphrun(base);
        ASSERT_EQ(plain.exit_code, 0) << plain.err;
        EXPECT_THAT(plain.err, Not(HasSubstr("speculative")));
        const auto lookup = test::run_graphrun(with(base, {"--spec", "lookup", "--draft-max", "6"}));
        ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
        EXPECT_EQ(lookup.out, plain.out);
        EXPECT_GT(counts_of(lookup.err).accepted, 0) << lookup.err;
        EXPECT_THAT(lookup.err, HasSubstr("tokens per pass per sequence"));
        const auto draft = test::run_graphrun(with(base, {"--spec", "draft", "-md", kShipped}));
        ASSERT_EQ(draft.exit_code, 0) << draft.err;
        EXPECT_EQ(draft.out, plain.out);
        const Counts counts = counts_of(draft.err, "draft");
        EXPECT_GT(counts.accepted, 0) << draft.err;
        if (sampling[1] == "0") {
            EXPECT_EQ(counts.accepted, counts.proposed) << draft.err;
        }
    }
}

TEST(SpecCli, BatchedAndServeRefuseADraftOfAnotherVocabulary) {
    const std::string draft =
        testing::random_model_file(testing::spec_of(32, 1, 2, 1, 48, 320, 99), "spec_cli_random_draft");
    const std::string expected = "--model-draft " + draft + ": its vocabulary is not the one of " + kShipped +
                                 ": 2048 tokens there and 320 here";
    auto r = test::run_graphrun({"batched", "-m", kShipped, "-p", "In", "--spec", "draft", "-md", draft});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(expected));
    EXPECT_EQ(r.out, "");
    r = test::run_graphrun({"serve", "-m", kShipped, "--port", "0", "--spec", "draft", "-md", draft});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr(expected));
    r = test::run_graphrun({"batched", "-m", kShipped, "-p", "In", "--spec", "draft"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--spec draft needs the draft model: give --model-draft FILE"));
    r = test::run_graphrun({"serve", "-m", kShipped, "--port", "0", "--lookup-ngram", "2"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("--lookup-ngram tunes --spec lookup: give --spec lookup too"));
}

}  // namespace
}  // namespace graphrun
