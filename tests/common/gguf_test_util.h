// tests/common/gguf_test_util.h — helpers shared by the GGUF tests: temp files, and RawGguf, a GGUF file
// built byte by byte so a test can break any field.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "runtime/gguf.h"

namespace graphrun::gguf_test {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

inline const std::string kShared = GRAPHRUN_SOURCE_DIR "/../shared";

// Malformed-file tests write thousands of small files: use memory-backed /dev/shm when there is one.
inline std::string temp_path(const std::string& name) {
    static const std::string dir =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm/" : ::testing::TempDir();
    return dir + "graphrun_gguf_" + std::to_string(::getpid()) + "_" + name;
}

inline void write_bytes(const std::string& path, const uint8_t* data, size_t n) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(n));
    ASSERT_TRUE(out.good()) << path;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(rng());
    return b;
}

// Opens `path` expecting a GgufError; returns its message (or a note that none was thrown).
inline std::string open_error(const std::string& path) {
    try {
        GgufFile::open(path);
    } catch (const GgufError& e) {
        return e.what();
    }
    return "<no GgufError>";
}

// A GGUF file built by hand, byte by byte, so tests can break any field.
struct RawGguf {
    std::vector<uint8_t> b;

    template <class T>
    RawGguf& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    RawGguf& u32(uint32_t v) { return put(v); }
    RawGguf& u64(uint64_t v) { return put(v); }
    RawGguf& str(const std::string& s) {
        u64(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return u32(version).u64(n_tensors).u64(n_kv);
    }
    RawGguf& kv_u32(const std::string& key, uint32_t v) {
        return str(key).u32(uint32_t(GgufType::U32)).u32(v);
    }
    RawGguf& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t ggml_type, uint64_t offset) {
        str(name).u32(uint32_t(ne.size()));
        for (uint64_t d : ne) u64(d);
        return u32(ggml_type).u64(offset);
    }
    RawGguf& pad(size_t alignment = 32) {
        b.resize((b.size() + alignment - 1) / alignment * alignment, 0);
        return *this;
    }
    RawGguf& zeros(size_t n) {
        b.resize(b.size() + n, 0);
        return *this;
    }

    // Writes the file and returns the error opening it raised.
    std::string error(const std::string& name) const {
        const std::string path = temp_path(name);
        write_bytes(path, b.data(), b.size());
        std::string message = open_error(path);
        std::filesystem::remove(path);
        // Every error names the file and the byte it is about.
        EXPECT_THAT(message, AllOf(StartsWith(path + ": "), HasSubstr(" at byte ")));
        return message;
    }
};

}  // namespace graphrun::gguf_test
