// tests/runtime/gguf_malformed_test.cpp — malformed GGUF files: each must fail with one GgufError that names
// the file, what is wrong and the byte, and never crash or read past the mapping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "runtime/gguf.h"
#include "tests/common/gguf_test_util.h"

namespace graphrun {
namespace {

using namespace gguf_test;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

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

TEST(GgufMalformed, UnknownTensorTypeNamesTensorAndType) {
    RawGguf unknown;
    unknown.header(1, 0).tensor("x", {4}, 999, 0).pad().zeros(64);
    EXPECT_THAT(unknown.error("t999.gguf"),
                HasSubstr("tensor 'x' has type unknown type 999 (ggml type id 999), whose block layout graphrun "
                          "does not know"));
    // An id ggml used once and removed (the Q4_0_4_4 interleaved layout): named, and refused.
    RawGguf removed;
    removed.header(1, 0).tensor("w", {32, 4}, 31, 0).pad().zeros(256);
    EXPECT_THAT(removed.error("t31.gguf"), HasSubstr("tensor 'w' has type Q4_0_4_4 (removed from ggml)"));
}

// A type graphrun has no kernel for still opens: reading and inspecting need only the layout.
TEST(GgufMalformed, KnownTypesWithoutKernelsOpen) {
    RawGguf raw;
    raw.header(3, 0)
        .tensor("output.weight", {256, 4}, 14, 0)  // Q6_K: 4 rows of one 210-byte block
        .tensor("ids", {4}, 26, 864)               // I32
        .tensor("iq", {256, 2}, 16, 896)           // IQ2_XXS: 2 rows of one 66-byte block
        .pad()
        .zeros(4096);
    const std::string path = temp_path("known.gguf");
    write_bytes(path, raw.b.data(), raw.b.size());
    const auto f = GgufFile::open(path);
    std::filesystem::remove(path);  // the mapping keeps the bytes
    ASSERT_EQ(f->tensors().size(), 3u);
    EXPECT_EQ(f->tensors()[0].type, DType::Q6_K);
    EXPECT_EQ(f->tensors()[0].nbytes, 4u * 210u);
    EXPECT_EQ(f->tensors()[1].type, DType::I32);
    EXPECT_EQ(f->tensors()[1].nbytes, 16u);
    EXPECT_EQ(f->tensors()[2].type, DType::IQ2_XXS);
    EXPECT_EQ(f->tensors()[2].nbytes, 2u * 66u);
    // Rows must still be whole blocks of the type.
    RawGguf ragged;
    ragged.header(1, 0).tensor("w", {100, 2}, 12, 0).pad().zeros(1024);
    EXPECT_THAT(ragged.error("ragged.gguf"),
                HasSubstr("tensor 'w' has rows of 100 elements, not a multiple of the Q4_K block size 256"));
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
                HasSubstr("'general.alignment' is 48, expected a power of two of at least 8"));
    EXPECT_THAT(RawGguf().header(0, 1).kv_u32("general.alignment", 0).error("align0.gguf"),
                HasSubstr("'general.alignment' is 0"));
    // Powers of two below 8: GGUF requires a multiple of 8 (f32 rows would be misaligned).
    for (uint32_t small : {1u, 2u, 4u})
        EXPECT_THAT(RawGguf().header(0, 1).kv_u32("general.alignment", small).error("align_small.gguf"),
                    HasSubstr("'general.alignment' is " + std::to_string(small) + ", expected a power of two of "
                              "at least 8 (GGUF requires a multiple of 8)"));
    RawGguf align8;
    align8.header(0, 1).kv_u32("general.alignment", 8);
    const std::string path = temp_path("align8.gguf");
    write_bytes(path, align8.b.data(), align8.b.size());
    EXPECT_EQ(GgufFile::open(path)->alignment(), 8u);
    std::filesystem::remove(path);
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
}  // namespace
}  // namespace graphrun
