// tests/gguf_test.cpp — GGUF writer/reader round trips, malformed files, and the real test models.
#include "runtime/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/fp16.h"

namespace graphrun {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kShared = GRAPHRUN_SOURCE_DIR "/../shared";

// Malformed-file tests write thousands of small files: use memory-backed /dev/shm when there is one.
std::string temp_path(const std::string& name) {
    static const std::string dir =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm/" : ::testing::TempDir();
    return dir + "graphrun_gguf_" + std::to_string(::getpid()) + "_" + name;
}

void write_bytes(const std::string& path, const uint8_t* data, size_t n) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(n));
    ASSERT_TRUE(out.good()) << path;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(rng());
    return b;
}

// Opens `path` expecting a GgufError; returns its message (or a note that none was thrown).
std::string open_error(const std::string& path) {
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

// ---- Round trips ----------------------------------------------------------------------------------

TEST(GgufRoundTrip, EveryValueTypeArraysAndStrings) {
    GgufWriter w;
    w.set("t.u8", GgufValue::make_u8(250));
    w.set("t.i8", GgufValue::make_i8(-120));
    w.set("t.u16", GgufValue::make_u16(65000));
    w.set("t.i16", GgufValue::make_i16(-32000));
    w.set_u32("t.u32", 4000000000u);
    w.set("t.i32", GgufValue::make_i32(-2000000000));
    w.set_f32("t.f32", 1.5e-5f);
    w.set_bool("t.bool", true);
    w.set_bool("t.false", false);
    w.set_string("t.string", "héllo ▁world");
    w.set_string("t.empty", "");
    w.set_string("t.nul", std::string("a\0b", 3));
    w.set("t.u64", GgufValue::make_u64(0xfedcba9876543210ull));
    w.set("t.i64", GgufValue::make_i64(-0x123456789abcdefll));
    w.set("t.f64", GgufValue::make_f64(3.141592653589793));
    w.set_strings("t.strings", {"<unk>", "", "▁the"});
    w.set_f32s("t.f32s", {0.f, -1.25f, 1e30f});
    w.set_i32s("t.i32s", {});
    w.set("t.nested", GgufValue::make_array(GgufType::ARRAY,
                                            {GgufValue::make_array(GgufType::U8, {GgufValue::make_u8(7)}),
                                             GgufValue::make_array(GgufType::STRING, {})}));
    w.set_u32("t.replaced", 1);
    w.set_u32("t.replaced", 2);  // replaces the value, keeps the position
    const std::string path = temp_path("values.gguf");
    w.write(path);

    auto f = GgufFile::open(path);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);
    EXPECT_EQ(f->metadata().size(), 20u);
    EXPECT_EQ(f->metadata().front().first, "t.u8");
    EXPECT_EQ(f->metadata().back().first, "t.replaced");
    EXPECT_EQ(f->find("t.u8")->type, GgufType::U8);
    EXPECT_EQ(f->get_int("t.u8"), 250);
    EXPECT_EQ(f->find("t.i8")->type, GgufType::I8);
    EXPECT_EQ(f->get_int("t.i8"), -120);
    EXPECT_EQ(f->find("t.u16")->type, GgufType::U16);
    EXPECT_EQ(f->get_int("t.u16"), 65000);
    EXPECT_EQ(f->get_int("t.i16"), -32000);
    EXPECT_EQ(f->get_int("t.u32"), 4000000000ll);
    EXPECT_EQ(f->get_int("t.i32"), -2000000000);
    EXPECT_EQ(f->find("t.f32")->type, GgufType::F32);
    EXPECT_EQ(f->get_float("t.f32"), double(1.5e-5f));
    EXPECT_EQ(f->find("t.bool")->type, GgufType::BOOL);
    EXPECT_EQ(f->get_int("t.bool"), 1);
    EXPECT_EQ(f->get_int("t.false"), 0);
    EXPECT_EQ(f->get_string("t.string"), "héllo ▁world");
    EXPECT_EQ(f->get_string("t.empty"), "");
    EXPECT_EQ(f->get_string("t.nul"), std::string("a\0b", 3));
    EXPECT_EQ(f->find("t.u64")->u, 0xfedcba9876543210ull);
    EXPECT_EQ(f->get_int("t.i64"), -0x123456789abcdefll);
    EXPECT_EQ(f->find("t.f64")->type, GgufType::F64);
    EXPECT_EQ(f->get_float("t.f64"), 3.141592653589793);
    EXPECT_EQ(f->get_int("t.replaced"), 2);

    const auto* strings = f->find_array("t.strings", GgufType::STRING);
    ASSERT_NE(strings, nullptr);
    ASSERT_EQ(strings->size(), 3u);
    EXPECT_EQ((*strings)[0].s, "<unk>");
    EXPECT_EQ((*strings)[1].s, "");
    EXPECT_EQ((*strings)[2].s, "▁the");
    const auto* floats = f->find_array("t.f32s", GgufType::F32);
    ASSERT_NE(floats, nullptr);
    ASSERT_EQ(floats->size(), 3u);
    EXPECT_EQ((*floats)[1].f, -1.25);
    EXPECT_EQ((*floats)[2].f, double(1e30f));
    ASSERT_NE(f->find_array("t.i32s", GgufType::I32), nullptr);
    EXPECT_TRUE(f->find_array("t.i32s", GgufType::I32)->empty());
    const auto* nested = f->find_array("t.nested", GgufType::ARRAY);
    ASSERT_NE(nested, nullptr);
    ASSERT_EQ(nested->size(), 2u);
    EXPECT_EQ((*nested)[0].elem_type, GgufType::U8);
    ASSERT_EQ((*nested)[0].array.size(), 1u);
    EXPECT_EQ((*nested)[0].array[0].u, 7u);
    EXPECT_EQ((*nested)[1].elem_type, GgufType::STRING);
    EXPECT_TRUE((*nested)[1].array.empty());
    EXPECT_EQ(f->find_array("t.absent", GgufType::U8), nullptr);
    EXPECT_TRUE(f->tensors().empty());
    std::filesystem::remove(path);
}

TEST(GgufRoundTrip, TensorsOfAllFourTypesByteForByte) {
    struct Spec {
        std::string name;
        DType type;
        std::vector<int64_t> ne;
        size_t nbytes;
    };
    const std::vector<Spec> specs = {
        {"a.f32", DType::F32, {3, 2}, 3 * 2 * 4},        // 24 bytes: the next tensor needs padding
        {"b.f16", DType::F16, {5}, 5 * 2},               //
        {"c.q8_0", DType::Q8_0, {64, 3}, 2 * 3 * 34},    //
        {"d.q4_0", DType::Q4_0, {32, 2, 3, 1}, 6 * 18},  // four dims
    };
    GgufWriter w;
    std::vector<std::vector<uint8_t>> data;
    for (size_t k = 0; k < specs.size(); ++k) {
        data.push_back(random_bytes(specs[k].nbytes, uint32_t(k + 1)));
        w.add_tensor(specs[k].name, specs[k].type, specs[k].ne, data.back().data(), data.back().size());
    }
    w.set_string("general.name", "tensors");
    const auto expected = data;
    for (auto& d : data)
        d.assign(d.size(), 0xee);  // the writer copied: the caller's buffers no longer matter
    const std::string path = temp_path("tensors.gguf");
    w.write(path);

    auto f = GgufFile::open(path);
    ASSERT_EQ(f->tensors().size(), specs.size());
    EXPECT_EQ(f->data_offset() % 32, 0u);
    uint64_t total = 0;
    for (size_t k = 0; k < specs.size(); ++k) {
        const GgufTensor& t = f->tensors()[k];
        SCOPED_TRACE(t.name);
        EXPECT_EQ(t.name, specs[k].name);
        EXPECT_EQ(t.type, specs[k].type);
        EXPECT_EQ(t.ne, specs[k].ne);
        EXPECT_EQ(t.shape(), std::vector<int64_t>(specs[k].ne.rbegin(), specs[k].ne.rend()));
        EXPECT_EQ(t.nbytes, specs[k].nbytes);
        EXPECT_EQ(t.offset % 32, 0u);
        EXPECT_EQ(t.data, f->find_tensor(t.name)->data);
        EXPECT_EQ(0, std::memcmp(t.data, expected[k].data(), expected[k].size()));
        total += t.nbytes;
    }
    EXPECT_EQ(f->tensors()[2].n_elements(), 192);
    EXPECT_EQ(f->tensor_bytes(), total);
    EXPECT_EQ(f->find_tensor("nope"), nullptr);
    std::filesystem::remove(path);
}

TEST(GgufRoundTrip, CustomAlignmentIsRespected) {
    GgufWriter w;
    w.set_u32("general.alignment", 256);
    const auto a = random_bytes(40, 5), b = random_bytes(8, 6);
    w.add_tensor("a", DType::F32, {10}, a.data(), a.size());
    w.add_tensor("b", DType::F16, {4}, b.data(), b.size());
    const std::string path = temp_path("align.gguf");
    w.write(path);
    auto f = GgufFile::open(path);
    EXPECT_EQ(f->alignment(), 256u);
    EXPECT_EQ(f->data_offset() % 256, 0u);
    EXPECT_EQ(f->tensors()[1].offset, 256u);
    EXPECT_EQ(0, std::memcmp(f->tensors()[1].data, b.data(), b.size()));
    // The padding between the infos and the data, and after each tensor, is zeros.
    const auto raw = read_bytes(path);
    EXPECT_EQ(raw.size() % 256, 0u);
    for (uint64_t k = f->data_offset() + 40; k < f->data_offset() + 256; ++k) ASSERT_EQ(raw[k], 0) << k;
    std::filesystem::remove(path);
}

TEST(GgufAccessors, WrongTypeAndMissingKeysNameTheKey) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("n", 7);
    w.set("big", GgufValue::make_u64(~0ull));
    w.set_f32s("scores", {1.f});
    const std::string path = temp_path("access.gguf");
    w.write(path);
    auto f = GgufFile::open(path);
    EXPECT_EQ(f->find_int("n"), 7);
    EXPECT_EQ(f->find_float("n"), 7.0);
    EXPECT_EQ(f->find_int("absent"), std::nullopt);
    EXPECT_EQ(f->find_string("general.architecture"), "llama");
    try {
        f->get_int("general.architecture");
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_STREQ(
            e.what(),
            (path + ": metadata key 'general.architecture' has type string, expected an integer").c_str());
    }
    EXPECT_THROW(f->get_string("n"), GgufError);
    EXPECT_THROW(f->find_string("n"), GgufError);
    try {
        f->get_float("llama.rope.freq_base");
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_STREQ(e.what(), (path + ": metadata key 'llama.rope.freq_base' is missing").c_str());
    }
    try {
        f->find_array("scores", GgufType::I32);
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), HasSubstr("'scores' has type array of f32, expected array of i32"));
    }
    EXPECT_THAT(open_error(path), "<no GgufError>");
    try {
        f->get_int("big");
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), HasSubstr("does not fit in an int64"));
    }
    std::filesystem::remove(path);
}

TEST(GgufWriterErrors, BadTensorsAndValuesAreRefused) {
    GgufWriter w;
    const auto bytes = random_bytes(1024, 9);
    EXPECT_THROW(w.add_tensor("x", DType::F32, {4}, bytes.data(), 15), GgufError);    // wrong nbytes
    EXPECT_THROW(w.add_tensor("x", DType::Q8_0, {33}, bytes.data(), 34), GgufError);  // partial block
    EXPECT_THROW(w.add_tensor("x", DType::F32, {}, bytes.data(), 4), GgufError);      // no dims
    EXPECT_THROW(w.add_tensor("x", DType::F32, {1, 1, 1, 1, 1}, bytes.data(), 4), GgufError);
    EXPECT_THROW(w.add_tensor("x", DType::F32, {0}, bytes.data(), 0), GgufError);
    w.add_tensor("x", DType::F32, {4}, bytes.data(), 16);
    EXPECT_THROW(w.add_tensor("x", DType::F32, {4}, bytes.data(), 16), GgufError);  // duplicate

    GgufWriter bad_value;
    GgufValue v = GgufValue::make_u8(1);
    v.u = 300;
    bad_value.set("k", v);
    EXPECT_THROW(bad_value.write(temp_path("never.gguf")), GgufError);
    GgufWriter bad_alignment;
    bad_alignment.set_u32("general.alignment", 48);
    EXPECT_THROW(bad_alignment.write(temp_path("never.gguf")), GgufError);
    EXPECT_FALSE(std::filesystem::exists(temp_path("never.gguf")));
    try {
        GgufWriter().write("/nonexistent-dir/x.gguf");
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), StartsWith("/nonexistent-dir/x.gguf: "));
    }
}

// ---- Malformed files ------------------------------------------------------------------------------

TEST(GgufMalformed, BadMagic) {
    RawGguf raw;
    raw.header(0, 0);
    raw.b[3] = 'X';
    EXPECT_THAT(raw.error("magic.gguf"), HasSubstr("not a GGUF file"));
    RawGguf short_file;
    short_file.b = {'G', 'G'};
    EXPECT_THAT(short_file.error("short.gguf"), HasSubstr("not a GGUF file"));
}

TEST(GgufMalformed, UnsupportedVersions) {
    EXPECT_THAT(RawGguf().header(0, 0, 1).error("v1.gguf"), HasSubstr("GGUF version 1 is not supported"));
    EXPECT_THAT(RawGguf().header(0, 0, 4).error("v4.gguf"), HasSubstr("GGUF version 4 is not supported"));
    EXPECT_THAT(RawGguf().header(0, 0, 0x03000000).error("be.gguf"), HasSubstr("big-endian"));
    // Version 2 is accepted.
    RawGguf v2;
    v2.header(0, 1, 2).kv_u32("a", 1);
    const std::string path = temp_path("v2.gguf");
    write_bytes(path, v2.b.data(), v2.b.size());
    EXPECT_EQ(GgufFile::open(path)->version(), 2u);
    std::filesystem::remove(path);
}

TEST(GgufMalformed, EveryTruncationIsAnError) {
    GgufWriter w;
    w.set_string("general.name", "truncate me");
    w.set_u32("n", 5);
    w.set("nested", GgufValue::make_array(GgufType::ARRAY,
                                          {GgufValue::make_array(GgufType::I16, {GgufValue::make_i16(3)})}));
    w.set_strings("tokens", {"a", "bc", "<0x0A>"});
    w.set_f32s("scores", {1.f, 2.f});
    w.set_bool("flag", true);
    const auto a = random_bytes(34 * 2, 1), b = random_bytes(12, 2);
    w.add_tensor("q", DType::Q8_0, {32, 2}, a.data(), a.size());
    w.add_tensor("f", DType::F32, {3}, b.data(), b.size());
    const std::string full = temp_path("full.gguf");
    w.write(full);
    const auto bytes = read_bytes(full);
    std::filesystem::remove(full);

    // Everything up to the last byte of the last tensor is needed; the padding after it is not.
    uint64_t needed = 0;
    {
        const std::string path = temp_path("needed.gguf");
        write_bytes(path, bytes.data(), bytes.size());
        auto f = GgufFile::open(path);
        needed = f->data_offset() + f->tensors()[1].offset + f->tensors()[1].nbytes;
        std::filesystem::remove(path);
    }
    ASSERT_LT(needed, bytes.size());
    const std::string path = temp_path("cut.gguf");
    for (uint64_t n = 0; n < needed; ++n) {
        write_bytes(path, bytes.data(), n);
        const std::string message = open_error(path);
        ASSERT_THAT(message, StartsWith(path + ": ")) << "prefix of " << n << " bytes";
        ASSERT_THAT(message, HasSubstr(" at byte ")) << "prefix of " << n << " bytes";
    }
    write_bytes(path, bytes.data(), needed);
    EXPECT_EQ(GgufFile::open(path)->tensors().size(), 2u);
    std::filesystem::remove(path);
}

// Random byte flips in the header and metadata: every result is a clean open or a GgufError.
TEST(GgufMalformed, RandomCorruptionNeverCrashes) {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.set_f32s("tokenizer.ggml.scores", {0.f, 0.f, 0.f, -1.f});
    w.set("nested", GgufValue::make_array(GgufType::ARRAY,
                                          {GgufValue::make_array(GgufType::U64, {GgufValue::make_u64(1)})}));
    const auto a = random_bytes(18 * 2, 3);
    w.add_tensor("w", DType::Q4_0, {64}, a.data(), a.size());
    const std::string path = temp_path("fuzz.gguf");
    w.write(path);
    const auto clean = read_bytes(path);
    const uint64_t data_offset = GgufFile::open(path)->data_offset();
    std::mt19937 rng(1234);
    int errors = 0;
    for (int round = 0; round < 800; ++round) {
        auto bytes = clean;
        for (int k = 0, n = 1 + int(rng() % 4); k < n; ++k) {
            const size_t at = rng() % data_offset;
            bytes[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(bytes[at] ^ (1u << (rng() % 8)));
        }
        write_bytes(path, bytes.data(), bytes.size());
        try {
            auto f = GgufFile::open(path);
            for (const GgufTensor& t : f->tensors())
                ASSERT_LE(t.data + t.nbytes, t.data - t.offset - f->data_offset() + f->file_size());
        } catch (const GgufError& e) {
            ++errors;
            ASSERT_THAT(e.what(), StartsWith(path + ": "));
        }
    }
    EXPECT_GT(errors, 250);  // most flips in structure fields must be caught
    std::filesystem::remove(path);
}

TEST(GgufMalformed, TruncationInsideAKeyNamesTheKey) {
    RawGguf raw;
    raw.header(0, 2).kv_u32("first", 1).str("general.name").u32(uint32_t(GgufType::STRING)).u64(100);
    raw.b.insert(raw.b.end(), {'a', 'b'});
    EXPECT_THAT(
        raw.error("cutkey.gguf"),
        HasSubstr("string of 100 bytes in key 'general.name' runs past the end of the file (2 bytes left)"));
    RawGguf raw2;
    raw2.header(0, 1).str("k").u32(uint32_t(GgufType::U64)).u32(0);
    EXPECT_THAT(raw2.error("cutvalue.gguf"), HasSubstr("file ends inside key 'k' (8 bytes needed, 4 left)"));
}

TEST(GgufMalformed, HostileStringLength) {
    RawGguf raw;
    raw.header(0, 1).u64(1ull << 60).zeros(16);
    EXPECT_THAT(raw.error("hostile_string.gguf"),
                AllOf(HasSubstr("string of 1152921504606846976 bytes"), HasSubstr("at byte 24")));
}

TEST(GgufMalformed, HostileArrayCount) {
    RawGguf raw;
    raw.header(0, 1)
        .str("tokenizer.ggml.tokens")
        .u32(uint32_t(GgufType::ARRAY))
        .u32(uint32_t(GgufType::STRING));
    raw.u64(1ull << 60).zeros(64);
    EXPECT_THAT(
        raw.error("hostile_array.gguf"),
        AllOf(HasSubstr("key 'tokenizer.ggml.tokens' is an array of 1152921504606846976 string values"),
              HasSubstr("cannot fit")));
    RawGguf u8s;
    u8s.header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY)).u32(uint32_t(GgufType::U8)).u64(9).zeros(8);
    EXPECT_THAT(u8s.error("u8_array.gguf"), HasSubstr("array of 9 u8 values"));
}

TEST(GgufMalformed, HostileCounts) {
    EXPECT_THAT(RawGguf().header(0, 1ull << 60).zeros(64).error("n_kv.gguf"),
                AllOf(HasSubstr("n_kv = 1152921504606846976"), HasSubstr("at byte 16")));
    EXPECT_THAT(RawGguf().header(1ull << 60, 0).zeros(64).error("n_tensors.gguf"),
                AllOf(HasSubstr("n_tensors = 1152921504606846976"), HasSubstr("at byte 8")));
    EXPECT_THAT(RawGguf().header(~0ull, ~0ull).error("n_all.gguf"), HasSubstr("cannot fit"));
}

TEST(GgufMalformed, TensorDataOutsideTheFile) {
    RawGguf raw;
    raw.header(1, 0).tensor("blk.0.attn_q.weight", {1024}, 0, 0).pad().zeros(64);
    EXPECT_THAT(raw.error("outside.gguf"),
                AllOf(HasSubstr("tensor 'blk.0.attn_q.weight' needs 4096 bytes at data offset 0"),
                      HasSubstr("has only 64 bytes")));
    RawGguf far;
    far.header(1, 0).tensor("w", {8}, 0, ~0ull << 5).pad().zeros(64);
    EXPECT_THAT(far.error("far.gguf"), HasSubstr("tensor 'w' needs 32 bytes at data offset"));
    RawGguf no_data;
    no_data.header(1, 0).tensor("w", {8}, 0, 0);  // infos end, then nothing: data section past the end
    EXPECT_THAT(no_data.error("no_data.gguf"), HasSubstr("past the end of the file"));
}

TEST(GgufMalformed, MisalignedOffset) {
    RawGguf raw;
    raw.header(1, 0).tensor("w", {4}, 0, 4).pad().zeros(64);
    EXPECT_THAT(raw.error("misaligned.gguf"),
                HasSubstr("tensor 'w' has offset 4, not a multiple of the alignment 32"));
    RawGguf custom;
    custom.header(1, 1).kv_u32("general.alignment", 64).tensor("w", {4}, 0, 32).pad(64).zeros(128);
    EXPECT_THAT(custom.error("misaligned64.gguf"), HasSubstr("not a multiple of the alignment 64"));
}

TEST(GgufMalformed, OverlappingTensors) {
    RawGguf raw;
    raw.header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {16}, 0, 32).pad().zeros(128);
    EXPECT_THAT(raw.error("overlap.gguf"), HasSubstr("tensor 'b' overlaps tensor 'a'"));
}

TEST(GgufMalformed, UnsupportedTensorTypeNamesTensorAndType) {
    RawGguf raw;
    raw.header(1, 0).tensor("output.weight", {256, 4}, 14, 0).pad().zeros(4096);
    EXPECT_THAT(raw.error("q6k.gguf"),
                HasSubstr("tensor 'output.weight' has type Q6_K, which graphrun cannot run "
                          "(supported: F32, F16, Q8_0, Q4_0)"));
    RawGguf i32;
    i32.header(1, 0).tensor("ids", {4}, 26, 0).pad().zeros(64);
    EXPECT_THAT(i32.error("i32.gguf"), HasSubstr("tensor 'ids' has type I32"));
    RawGguf unknown;
    unknown.header(1, 0).tensor("x", {4}, 999, 0).pad().zeros(64);
    EXPECT_THAT(unknown.error("t999.gguf"), HasSubstr("unknown type 999"));
}

TEST(GgufMalformed, BadDimensions) {
    EXPECT_THAT(RawGguf().header(1, 0).tensor("w", {}, 0, 0).pad().zeros(64).error("dims0.gguf"),
                HasSubstr("tensor 'w' has n_dims 0, expected 1 to 4"));
    EXPECT_THAT(RawGguf().header(1, 0).tensor("w", {1, 1, 1, 1, 1}, 0, 0).pad().zeros(64).error("dims5.gguf"),
                HasSubstr("tensor 'w' has n_dims 5, expected 1 to 4"));
    EXPECT_THAT(RawGguf().header(1, 0).tensor("w", {4, 0}, 0, 0).pad().zeros(64).error("ne0.gguf"),
                HasSubstr("tensor 'w' has ne[1] = 0, expected at least 1"));
    EXPECT_THAT(
        RawGguf().header(1, 0).tensor("w", {1ull << 62, 1ull << 62}, 0, 0).pad().zeros(64).error("big.gguf"),
        HasSubstr("tensor 'w' has more elements than fit in an int64"));
    EXPECT_THAT(RawGguf().header(1, 0).tensor("w", {1ull << 62}, 0, 0).pad().zeros(64).error("bytes.gguf"),
                HasSubstr("tensor 'w' has more bytes than fit"));
    EXPECT_THAT(RawGguf().header(1, 0).tensor("w", {33}, 8, 0).pad().zeros(64).error("block.gguf"),
                HasSubstr("tensor 'w' has rows of 33 elements, not a multiple of the Q8_0 block size 32"));
}

TEST(GgufMalformed, DuplicateKeyAndTensorName) {
    EXPECT_THAT(RawGguf()
                    .header(0, 2)
                    .kv_u32("llama.block_count", 1)
                    .kv_u32("llama.block_count", 2)
                    .error("dupkey.gguf"),
                HasSubstr("duplicate key 'llama.block_count'"));
    EXPECT_THAT(RawGguf()
                    .header(2, 0)
                    .tensor("w", {8}, 0, 0)
                    .tensor("w", {8}, 0, 32)
                    .pad()
                    .zeros(64)
                    .error("dupt.gguf"),
                HasSubstr("duplicate tensor 'w'"));
}

TEST(GgufMalformed, BadAlignmentValues) {
    EXPECT_THAT(RawGguf().header(0, 1).kv_u32("general.alignment", 48).error("align48.gguf"),
                HasSubstr("'general.alignment' is 48, expected a nonzero power of two"));
    EXPECT_THAT(RawGguf().header(0, 1).kv_u32("general.alignment", 0).error("align0.gguf"),
                HasSubstr("'general.alignment' is 0"));
    EXPECT_THAT(RawGguf()
                    .header(0, 1)
                    .str("general.alignment")
                    .u32(uint32_t(GgufType::STRING))
                    .str("32")
                    .error("aligns.gguf"),
                HasSubstr("'general.alignment' has type string, expected u32"));
}

TEST(GgufMalformed, BadValueTypesAndBools) {
    EXPECT_THAT(RawGguf().header(0, 1).str("k").u32(13).u32(0).error("type13.gguf"),
                HasSubstr("key 'k' has unknown value type 13"));
    EXPECT_THAT(
        RawGguf().header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY)).u32(77).u64(0).error("elem77.gguf"),
        HasSubstr("key 'k' is an array of unknown type 77"));
    RawGguf b;
    b.header(0, 1).str("k").u32(uint32_t(GgufType::BOOL)).put<uint8_t>(2);
    EXPECT_THAT(b.error("bool2.gguf"), HasSubstr("key 'k' has a bool byte 2, expected 0 or 1"));
    RawGguf deep;
    deep.header(0, 1).str("k").u32(uint32_t(GgufType::ARRAY));
    for (int d = 0; d < 20; ++d) deep.u32(uint32_t(GgufType::ARRAY)).u64(1);
    deep.zeros(64);
    EXPECT_THAT(deep.error("deep.gguf"), HasSubstr("key 'k' nests arrays deeper than"));
}

TEST(GgufMalformed, NotARegularFileOrMissing) {
    EXPECT_THAT(open_error(::testing::TempDir()), HasSubstr("not a regular file"));
    EXPECT_THAT(open_error(temp_path("does-not-exist.gguf")), HasSubstr("cannot open"));
}

// ---- Real files -------------------------------------------------------------------------------------

TEST(GgufRealFiles, Stories260K) {
    const std::string path = kShared + "/models/stories260K.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    auto f = GgufFile::open(path);
    EXPECT_EQ(f->get_string("general.architecture"), "llama");
    EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
    EXPECT_EQ(f->get_int("llama.block_count"), 5);
    EXPECT_EQ(f->get_int("llama.feed_forward_length"), 172);
    EXPECT_EQ(f->get_int("llama.attention.head_count"), 8);
    EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
    const GgufTensor* embd = f->find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, DType::F32);
    EXPECT_EQ(embd->shape(), (std::vector<int64_t>{512, 64}));
    EXPECT_EQ(f->tensors().size(), 3u + 9u * 5u);  // embeddings, output norm, output + 9 per layer
    const auto* tokens = f->find_array("tokenizer.ggml.tokens", GgufType::STRING);
    ASSERT_NE(tokens, nullptr);
    EXPECT_EQ(tokens->size(), 512u);
    EXPECT_LE(f->data_offset() + f->tensor_bytes(), f->file_size());
}

TEST(GgufRealFiles, LlamaCppQ4_0FileRefusesItsQ6_KOutput) {
    const std::string path = kShared + "/testdata/llamacpp-quantized/rand256-Q4_0.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    const std::string message = open_error(path);
    EXPECT_THAT(message, AllOf(StartsWith(path + ": "), HasSubstr("tensor 'output.weight' has type Q6_K")));
}

TEST(GgufRealFiles, LlamaCppQ8_0AndVocabOnlyFilesOpen) {
    const std::string q8 = kShared + "/testdata/llamacpp-quantized/rand256-Q8_0.gguf";
    const std::string vocab = kShared + "/testdata/tokenizer/ggml-vocab-llama-spm.gguf";
    if (!std::filesystem::exists(q8) || !std::filesystem::exists(vocab)) GTEST_SKIP() << "missing test data";
    auto f = GgufFile::open(q8);
    const GgufTensor* wq = f->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(wq, nullptr);
    EXPECT_EQ(wq->type, DType::Q8_0);
    EXPECT_EQ(wq->shape(), (std::vector<int64_t>{256, 256}));
    auto v = GgufFile::open(vocab);
    EXPECT_TRUE(v->tensors().empty());
    EXPECT_EQ(v->find_array("tokenizer.ggml.tokens", GgufType::STRING)->size(), 32000u);
}

}  // namespace
}  // namespace graphrun
