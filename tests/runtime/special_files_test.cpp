// tests/runtime/special_files_test.cpp — files that are not what they seem: FIFOs that nobody writes,
// /dev/zero, directories (runtime/bounded_read.h for graph and prompt files; GgufFile for models).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "runtime/bounded_read.h"
#include "runtime/gguf.h"
#include "tests/common/error_of.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

using testing::error_of;

// ---- bounded reads ----

TEST(BoundedRead, LimitsSpecialFilesAndTypes) {
    const std::string dir = testing::test_temp_dir().string();
    const std::string small = dir + "/small.txt", fifo = dir + "/fifo";
    std::ofstream(small) << "hello";
    EXPECT_EQ(read_bounded_file(small, 5, "a test file"), "hello");
    EXPECT_THAT(error_of([&] { read_bounded_file(small, 4, "a test file"); }),
                HasSubstr(small + ": is larger than 4 bytes, the limit for a test file"));
    EXPECT_THAT(error_of([] { read_bounded_file("/dev/zero", 1 << 20, "a test file"); }),
                HasSubstr("/dev/zero: is larger than 1048576 bytes"));
    EXPECT_THAT(error_of([&] { read_bounded_file(dir, 100, "a test file"); }), HasSubstr("is a directory"));
    EXPECT_THAT(error_of([&] { read_bounded_file(dir + "/missing", 100, "a test file"); }), HasSubstr("cannot open"));
    // A FIFO nobody writes to reads as empty at once instead of blocking in open().
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(read_bounded_file(fifo, 100, "a test file"), "");
}

TEST(SpecialFiles, AModelThatIsAFifoIsRefusedWithoutWaitingForAWriter) {
    const std::string fifo = (testing::test_temp_dir() / "model.fifo").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_THAT(error_of([&] { GgufFile::open(fifo); }),
                AllOf(HasSubstr(fifo + ": not a regular file"), HasSubstr("memory-mapped")));
    EXPECT_THAT(error_of([] { GgufFile::open("/dev/zero"); }), HasSubstr("/dev/zero: not a regular file"));
}

}  // namespace
}  // namespace graphrun
