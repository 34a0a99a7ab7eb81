// tests/runtime/gguf_test.cpp — GGUF writer/reader round trips, accessors, writer errors, and the real test models.
#include "runtime/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "tests/common/gguf_test_util.h"

namespace graphrun {
namespace {

using namespace gguf_test;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

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

TEST(GgufRoundTrip, StreamedTensorsMatchCopiedOnesByteForByte) {
    const auto a = random_bytes(24, 11), b = random_bytes(2 * 3 * 34, 12), c = random_bytes(10, 13);
    GgufWriter copied, streamed;
    for (GgufWriter* w : {&copied, &streamed}) w->set_string("general.name", "streamed");
    copied.add_tensor("a", DType::F32, {3, 2}, a.data(), a.size());
    copied.add_tensor("b", DType::Q8_0, {64, 3}, b.data(), b.size());
    copied.add_tensor("c", DType::F16, {5}, c.data(), c.size());
    // Streamed and stored tensors mix; producers run once each, in file order, at write() time.
    std::vector<std::string> calls;
    streamed.add_tensor_from("a", DType::F32, {3, 2}, [&](std::vector<uint8_t>& bytes) {
        calls.push_back("a");
        bytes = a;
    });
    streamed.add_tensor("b", DType::Q8_0, {64, 3}, b.data(), b.size());
    streamed.add_tensor_from("c", DType::F16, {5}, [&](std::vector<uint8_t>& bytes) {
        calls.push_back("c");
        EXPECT_TRUE(bytes.empty());  // the reused buffer is handed over empty
        bytes = c;
    });
    EXPECT_TRUE(calls.empty());
    const std::string copied_path = temp_path("copied.gguf"), streamed_path = temp_path("streamed.gguf");
    copied.write(copied_path);
    streamed.write(streamed_path);
    EXPECT_EQ(calls, (std::vector<std::string>{"a", "c"}));
    EXPECT_EQ(read_bytes(streamed_path), read_bytes(copied_path));
    auto f = GgufFile::open(streamed_path);
    ASSERT_EQ(f->tensors().size(), 3u);
    EXPECT_EQ(0, std::memcmp(f->find_tensor("c")->data, c.data(), c.size()));

    // A producer that yields the wrong size names the tensor and leaves no file behind.
    GgufWriter wrong;
    wrong.add_tensor_from("blk.0.attn_q.weight", DType::Q4_0, {32, 2},
                          [](std::vector<uint8_t>& bytes) { bytes.assign(35, 0); });
    const std::string never = temp_path("never_streamed.gguf");
    try {
        wrong.write(never);
        ADD_FAILURE() << "no error";
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), AllOf(StartsWith(never + ": "), HasSubstr("'blk.0.attn_q.weight'"),
                                    HasSubstr("gave 35 bytes"), HasSubstr("needs 36")));
    }
    EXPECT_FALSE(std::filesystem::exists(never));
    EXPECT_FALSE(std::filesystem::exists(never + ".tmp." + std::to_string(::getpid())));
    std::filesystem::remove(copied_path);
    std::filesystem::remove(streamed_path);
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

// ---- Real files -------------------------------------------------------------------------------------
// (The reader on files llama.cpp wrote: structure only, no output compared, so the sanitizer pass runs it.)

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

// Every file llama-quantize wrote opens, whatever its types; sizes follow from the block layouts.
TEST(GgufRealFiles, LlamaCppQuantizedFilesOpenWithTheirTypes) {
    const std::string dir = kShared + "/testdata/llamacpp-quantized/";
    if (!std::filesystem::exists(dir + "rand256-Q4_K_M.gguf")) GTEST_SKIP() << "missing " << dir;
    const auto q4_0 = GgufFile::open(dir + "rand256-Q4_0.gguf");
    EXPECT_EQ(q4_0->find_tensor("output.weight")->type, DType::Q6_K);  // llama-quantize's choice
    EXPECT_EQ(q4_0->find_tensor("blk.0.attn_q.weight")->type, DType::Q4_0);
    const auto q4_k_m = GgufFile::open(dir + "rand256-Q4_K_M.gguf");
    const GgufTensor* wq = q4_k_m->find_tensor("blk.0.attn_q.weight");
    ASSERT_NE(wq, nullptr);
    EXPECT_EQ(wq->type, DType::Q4_K);
    EXPECT_EQ(wq->nbytes, 256u * 144u);  // 256 rows of one 144-byte super-block
    EXPECT_EQ(q4_k_m->find_tensor("output.weight")->type, DType::Q6_K);
    const auto q6_k = GgufFile::open(dir + "rand256-Q6_K.gguf");
    EXPECT_EQ(q6_k->find_tensor("blk.1.ffn_down.weight")->type, DType::Q6_K);
    EXPECT_EQ(q6_k->find_tensor("blk.1.ffn_down.weight")->nbytes, 256u * 3u * 210u);  // rows of 768
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
