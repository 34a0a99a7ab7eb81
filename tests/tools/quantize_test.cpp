// tests/tools/quantize_test.cpp — `graphrun quantize` writes the file llama-quantize would, and it runs.
//
//   - the file: types per tensor, shapes, metadata, norms untouched, unblockable rows kept and reported
//     (byte for byte llama-quantize's Q8_0 file of the shared rand256 model is
//     tests/parity/llama_quantize_test.cpp's);
//   - conversions: from F16, from the other quantized type, and copies of the same type;
//   - errors and the command line.
// The end-to-end error of quantization is in quantize_accuracy_test.cpp, parity with llama.cpp in
// tests/parity/quantized_parity_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "tools/lib/quantize_model.h"
#include "engine/session.h"
#include "ops/quant/traits.h"
#include "tests/common/parity_util.h"
#include "tests/common/quantize_test_util.h"
#include "runtime/gguf.h"
#include "tests/common/test_models.h"

namespace graphrun {
namespace {

using testing::metadata_map;
using testing::same_value;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// The odd model: 64 wide, but ffn_down's rows have n_ff = 100 elements, which no block of 32 divides.
graph::RandomLlamaSpec odd_spec(DType type = DType::F32) {
    graph::RandomLlamaSpec spec = testing::spec_of(64, 2, 4, 2, 100, 320, 3);
    spec.type = type;
    return spec;
}

class QuantizeFile : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizeFile, MatricesBecomeTheTypeNormsStayAndUnblockableRowsAreKept) {
    const DType type = GetParam();
    const std::string in = testing::random_model_file(odd_spec(), "quantize_odd");
    testing::TempFile out("quantize_odd_" + std::string(dtype_name(type)));
    std::vector<std::string> progressed;
    const graph::QuantizeReport report =
        graph::quantize_model(in, out.path, type, [&](size_t done, size_t total, const std::string& name) {
            EXPECT_EQ(done, progressed.size() + 1);
            EXPECT_EQ(total, 21u);
            progressed.push_back(name);
        });

    const auto src = GgufFile::open(in);
    const auto dst = GgufFile::open(out.path);
    ASSERT_EQ(dst->tensors().size(), src->tensors().size());
    EXPECT_EQ(progressed.size(), src->tensors().size());
    EXPECT_EQ(dst->alignment(), src->alignment());
    for (size_t k = 0; k < src->tensors().size(); ++k) {
        const GgufTensor& a = src->tensors()[k];
        const GgufTensor& b = dst->tensors()[k];
        SCOPED_TRACE(a.name);
        EXPECT_EQ(b.name, a.name);
        EXPECT_EQ(progressed[k], a.name);
        EXPECT_EQ(b.ne, a.ne);
        const bool is_norm = a.ne.size() == 1;
        const bool is_ffn_down = a.name.find("ffn_down") != std::string::npos;
        // llama-quantize's choice for output.weight: Q6_K in a Q4_0 file, which rows of 64 cannot hold
        // (blocks of 256), so its fallback Q8_0.
        const DType want = is_norm || is_ffn_down ? DType::F32 : a.name == "output.weight" ? DType::Q8_0 : type;
        EXPECT_EQ(b.type, want);
        if (is_norm || is_ffn_down) {  // untouched, byte for byte
            ASSERT_EQ(b.nbytes, a.nbytes);
            EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0);
        }
        const graph::QuantizedTensor& r = report.tensors[k];
        EXPECT_EQ(r.name, a.name);
        EXPECT_EQ(r.shape, a.shape());
        EXPECT_EQ(r.to, b.type);
        EXPECT_EQ(r.bytes_out, b.nbytes);
        EXPECT_EQ(r.action, is_norm       ? graph::TensorAction::Kept
                            : is_ffn_down ? graph::TensorAction::Unblockable
                                          : graph::TensorAction::Quantized);
        if (is_ffn_down) {
            EXPECT_THAT(r.why, AllOf(HasSubstr("100"), HasSubstr("multiple")));
        }
    }
    EXPECT_EQ(report.count(graph::TensorAction::Quantized), 14u);  // token_embd, output, 6 per layer
    EXPECT_EQ(report.count(graph::TensorAction::Unblockable), 2u);
    EXPECT_EQ(report.count(graph::TensorAction::Kept), 5u);
    EXPECT_EQ(report.bytes_in, src->tensor_bytes());
    EXPECT_EQ(report.bytes_out, dst->tensor_bytes());
    EXPECT_EQ(report.file_bytes_out, dst->file_size());

    // Metadata: everything copied, but the file type says what the file now is.
    auto before = metadata_map(*src), after = metadata_map(*dst);
    EXPECT_EQ(after.at("general.file_type")->as_int("ft"), type == DType::Q8_0 ? 7 : 2);
    EXPECT_EQ(after.at("general.quantization_version")->as_int("qv"), 2);
    for (const auto& [key, value] : before) {
        if (key != "general.file_type") {
            EXPECT_TRUE(same_value(*value, *after.at(key))) << key;
        }
    }
    EXPECT_EQ(after.size(), before.size() + 1);

    // And the mixed file runs: quantized matmuls beside matmul_f32 on the unblockable ffn_down.
    auto model = graph::Model::load(out.path);
    graph::Session session(model, {.n_ctx = 32});
    const std::vector<int32_t> tokens = {1, 45, 300, 77};
    auto logits = session.eval(tokens);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x));
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeFile, ::testing::Values(DType::Q8_0, DType::Q4_0),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// Each quantized tensor holds exactly quantize_row(dequantize_row(source row)): from F16, and from
// the other quantized type (requantization). A tensor already in the type is copied byte for byte.
TEST(Quantize, ConvertsF16AndRequantizesAndCopiesRowByRow) {
    const std::string f16 = testing::random_model_file(odd_spec(DType::F16), "quantize_odd_f16");
    testing::TempFile q8("quantize_from_f16_q8_0"), q4("quantize_from_q8_0_q4_0"),
        q8_again("quantize_q8_again");
    graph::quantize_model(f16, q8.path, DType::Q8_0);
    const graph::QuantizeReport requantized = graph::quantize_model(q8.path, q4.path, DType::Q4_0);
    const graph::QuantizeReport copied = graph::quantize_model(q8.path, q8_again.path, DType::Q8_0);

    auto expect_rows = [](const GgufFile& from_file, const GgufFile& to_file) {
        for (size_t k = 0; k < from_file.tensors().size(); ++k) {
            const GgufTensor& a = from_file.tensors()[k];
            const GgufTensor& b = to_file.tensors()[k];
            SCOPED_TRACE(a.name);
            if (a.type == b.type) {
                ASSERT_EQ(a.nbytes, b.nbytes);
                EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0);
                continue;
            }
            const int64_t n = a.ne[0];
            std::vector<float> row(static_cast<size_t>(n));
            std::vector<uint8_t> want(size_t(row_bytes(b.type, n)));
            for (int64_t i = 0; i < a.n_elements() / n; ++i) {
                ops::dequantize_row(a.type, a.data + i * row_bytes(a.type, n), row.data(), n);
                ops::quant_traits(b.type)->quantize_row(row.data(), want.data(), n);
                ASSERT_EQ(std::memcmp(b.data + i * row_bytes(b.type, n), want.data(), want.size()), 0)
                    << "row " << i;
            }
        }
    };
    const auto f16_file = GgufFile::open(f16), q8_file = GgufFile::open(q8.path);
    expect_rows(*f16_file, *q8_file);
    expect_rows(*q8_file, *GgufFile::open(q4.path));
    expect_rows(*q8_file, *GgufFile::open(q8_again.path));

    // The F16 file's unblockable ffn_down stays F16.
    EXPECT_EQ(q8_file->find_tensor("blk.0.ffn_down.weight")->type, DType::F16);
    // output.weight is Q8_0 in the Q4_0 file too (rows of 64 cannot hold Q6_K): copied.
    EXPECT_EQ(requantized.count(graph::TensorAction::Quantized), 13u);
    EXPECT_EQ(requantized.count(graph::TensorAction::Copied), 1u);
    EXPECT_EQ(copied.count(graph::TensorAction::Copied), 14u);
    EXPECT_EQ(copied.count(graph::TensorAction::Quantized), 0u);
}

TEST(Quantize, ErrorsSayWhatIsWrong) {
    const std::string in = testing::random_model_file(odd_spec(), "quantize_odd");
    testing::TempFile out("quantize_errors");
    try {
        graph::quantize_model(in, out.path, DType::F16);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), AllOf(HasSubstr("f16"), HasSubstr("q8_0"), HasSubstr("q4_0")));
    }
    try {
        graph::quantize_model(in, in, DType::Q8_0);
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("is the input"));
    }
    try {
        graph::quantize_model("/nonexistent/in.gguf", out.path, DType::Q8_0);
        FAIL();
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), HasSubstr("/nonexistent/in.gguf"));
    }
    const std::string dir = (std::filesystem::temp_directory_path() / "graphrun_no_such_dir").string();
    try {
        graph::quantize_model(in, dir + "/out.gguf", DType::Q8_0);
        FAIL();
    } catch (const GgufError& e) {
        EXPECT_THAT(e.what(), HasSubstr(dir + "/out.gguf"));
    }
    EXPECT_FALSE(std::filesystem::exists(out.path));  // nothing half-written was left behind
}

// ---- the command line ----

TEST(QuantizeCli, WritesTheFileReportsKeptTensorsAndSummarises) {
    const std::string in = testing::random_model_file(odd_spec(), "quantize_odd");
    testing::TempFile out("quantize_cli");
    // stderr is a pipe here, so progress comes one line per tensor (no \r animation).
    test::ProcessResult r = test::run_graphrun({"quantize", in, out.path, "Q4_0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.err, AllOf(HasSubstr("[100%] 21/21 output.weight\n"), HasSubstr("1/21 token_embd.weight\n"),
                             Not(HasSubstr("\r"))));
    EXPECT_THAT(r.err, AllOf(HasSubstr("kept blk.0.ffn_down.weight f32 (64, 100) unquantized: rows of 100"),
                             HasSubstr("kept blk.1.ffn_down.weight")));
    EXPECT_THAT(r.err, HasSubstr("output.weight -> q8_0: rows of 64 elements are not a multiple of the q6_k block"));
    EXPECT_THAT(r.out, AllOf(HasSubstr("wrote " + out.path + ": q4_0 (llama.cpp file type 2)"),
                             HasSubstr("13 q4_0, 1 q8_0"), HasSubstr("2 kept unquantized"), HasSubstr("x smaller")));
    EXPECT_EQ(GgufFile::open(out.path)->find_tensor("output.weight")->type, DType::Q8_0);
    // --pure: every matrix in the one type, the forced output type aside.
    testing::TempFile pure("quantize_cli_pure");
    r = test::run_graphrun({"quantize", "--pure", "--output-tensor-type", "f16", in, pure.path, "q4_0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, AllOf(HasSubstr("q4_0, pure"), HasSubstr("1 f16, 13 q4_0")));
    EXPECT_EQ(GgufFile::open(pure.path)->find_tensor("output.weight")->type, DType::F16);
    EXPECT_EQ(GgufFile::open(pure.path)->find_tensor("blk.0.attn_v.weight")->type, DType::Q4_0);
}

TEST(QuantizeCli, BadTypeAndMissingInputFailWithExitCodeOne) {
    const std::string in = testing::random_model_file(odd_spec(), "quantize_odd");
    testing::TempFile out("quantize_cli_errors");
    test::ProcessResult bad_type = test::run_graphrun({"quantize", in, out.path, "q3_k_m"});
    EXPECT_EQ(bad_type.exit_code, 1);
    EXPECT_THAT(bad_type.err, AllOf(HasSubstr("unknown type 'q3_k_m'"), HasSubstr("q8_0, q4_0, q4_1")));
    test::ProcessResult bad_output =
        test::run_graphrun({"quantize", "--output-tensor-type", "iq2_xxs", in, out.path, "q8_0"});
    EXPECT_EQ(bad_output.exit_code, 1);
    EXPECT_THAT(bad_output.err, HasSubstr("--output-tensor-type 'iq2_xxs' is not a type graphrun writes"));
    test::ProcessResult f16 = test::run_graphrun({"quantize", in, out.path, "f16"});
    EXPECT_EQ(f16.exit_code, 1);
    EXPECT_THAT(f16.err, HasSubstr("unknown type 'f16'"));
    test::ProcessResult missing = test::run_graphrun({"quantize", "/nonexistent/in.gguf", out.path, "q8_0"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_THAT(missing.err, HasSubstr("/nonexistent/in.gguf"));
    EXPECT_FALSE(std::filesystem::exists(out.path));
}

}  // namespace
}  // namespace graphrun
