// tests/cli/data_files_test.cpp — where graphrun finds its graphs and model (graph/data_files.h); what
// `graphrun --version` says is in version_test.cpp. The installed layout itself is tested on the .deb by
// tests/cli/package_test.sh (ctest PackageInstall).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "graph/data_files.h"
#include "graph/graph.h"
#include "tests/common/parity_util.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kSource = GRAPHRUN_SOURCE_DIR;

// Sets (or, given nullopt, unsets) $GRAPHRUN_DATA for one test and puts the old value back.
class DataOverride {
public:
    explicit DataOverride(std::optional<std::string> value) {
        if (const char* old = std::getenv("GRAPHRUN_DATA")) old_ = old;
        if (value) ::setenv("GRAPHRUN_DATA", value->c_str(), 1);
        else ::unsetenv("GRAPHRUN_DATA");
    }
    ~DataOverride() {
        if (old_) ::setenv("GRAPHRUN_DATA", old_->c_str(), 1);
        else ::unsetenv("GRAPHRUN_DATA");
    }

private:
    std::optional<std::string> old_;
};

using test::run_graphrun_here;

std::string data_error(const std::string& relative) {
    try {
        graph::find_data_file(relative);
    } catch (const graph::DataFileError& e) {
        return e.what();
    }
    return "(found " + relative + ")";
}

TEST(DataFiles, BuildTreeFindsTheCheckoutItWasConfiguredFrom) {
    DataOverride unset(std::nullopt);
    EXPECT_TRUE(fs::equivalent(graph::find_data_file("models/llama.json"), kSource / "models/llama.json"));
    EXPECT_TRUE(fs::equivalent(graph::default_model_path(), kSource / "models/kjv-q8_0.gguf"));
    EXPECT_TRUE(fs::equivalent(graph::find_data_file("models/examples"), kSource / "models/examples"));
    // The place beside the executable comes first, so an installed tree wins over a checkout.
    const std::vector<graph::DataFolder> path = graph::data_search_path();
    ASSERT_EQ(path.size(), 2u);
    EXPECT_THAT(path[0].origin, HasSubstr("beside the executable"));
    EXPECT_THAT(path[1].origin, HasSubstr("build tree"));
}

TEST(DataFiles, OverrideReplacesEveryOtherPlace) {
    const fs::path data = testing::test_temp_dir() / "data";
    fs::create_directories(data / "models");
    std::ofstream(data / "models/llama.json") << "{}";
    DataOverride set(data.string());
    EXPECT_EQ(graph::find_data_file("models/llama.json"), (data / "models/llama.json").string());
    ASSERT_EQ(graph::data_search_path().size(), 1u);
    // The model is in the checkout but not in $GRAPHRUN_DATA: not found, and the message says why.
    const std::string message = data_error("models/kjv-q8_0.gguf");
    EXPECT_THAT(message, HasSubstr("cannot find models/kjv-q8_0.gguf"));
    EXPECT_THAT(message, HasSubstr((data / "models/kjv-q8_0.gguf").string() + " ($GRAPHRUN_DATA)"));
    EXPECT_THAT(message, HasSubstr("replaces the other places"));
    EXPECT_THAT(message, Not(HasSubstr(kSource.string() + "/models")));
}

TEST(DataFiles, EmptyOverrideCountsAsUnset) {
    DataOverride empty("");
    EXPECT_TRUE(fs::equivalent(graph::find_data_file("models/llama.json"), kSource / "models/llama.json"));
}

TEST(DataFiles, MissingFileNamesEveryPlaceLookedIn) {
    DataOverride unset(std::nullopt);
    const std::string message = data_error("models/no-such-graph.json");
    for (const graph::DataFolder& folder : graph::data_search_path())
        EXPECT_THAT(message, HasSubstr((fs::path(folder.path) / "models/no-such-graph.json").string() + " (" +
                                       folder.origin + ")"));
    EXPECT_THAT(message, HasSubstr("GRAPHRUN_DATA"));
}

TEST(DataFiles, DefaultModelRunsWithoutDashM) {
    test::ProcessResult r = run_graphrun_here({"-p", "And God said", "-n", "4", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("And God said"));
    EXPECT_THAT(r.err, HasSubstr((kSource / "models/kjv-q8_0.gguf").string()));
}

}  // namespace
}  // namespace graphrun
