// tests/cli/process_helper_test.cpp — the helper every test that runs a process stands on
// (tests/common/parity_util.h): run_process captures both streams and the exit status, and
// run_graphrun runs this build's graphrun.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tests/common/parity_util.h"

namespace graphrun::test {
namespace {

TEST(ProcessHelper, CapturesStdoutStderrAndExitStatus) {
    const ProcessResult r = run_process(
        {"/bin/sh", "-c", "echo to-out; echo to-err >&2; echo \"$PARITY_X\"; exit 3"}, {"PARITY_X=from-env"});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.out, "to-out\nfrom-env\n");
    EXPECT_EQ(r.err, "to-err\n");

    // More than a pipe buffer on both streams at once must not deadlock.
    const ProcessResult big =
        run_process({"/bin/sh", "-c", "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2"});
    EXPECT_EQ(big.exit_code, 0);
    EXPECT_EQ(big.out.size(), 300000u);
    EXPECT_EQ(big.err.size(), 200000u);

    EXPECT_THROW(run_process({"graphrun-no-such-program-xyz"}), std::runtime_error);
}

TEST(ProcessHelper, RunsTheGraphrunBinary) {
    const ProcessResult help = run_graphrun({"--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_NE(help.out.find("graphrun"), std::string::npos) << help.out;
    const ProcessResult bad = run_graphrun({"--no-such-option-xyz"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_FALSE(bad.err.empty());
}

}  // namespace
}  // namespace graphrun::test
