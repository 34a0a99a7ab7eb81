// tests/ops/ops_test.cpp — embedding, rmsnorm, rope, swiglu and add: each kernel against its plain-loop
// reference (whole range, ranges cut at odd places, in place where the row allows it) on odd shapes,
// hand-computed values that pin the formulas, and infer rejecting bad nodes with a message that says why.
// matmul_f32 and attention have their own files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ops/quant/traits.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "tests/common/op_test_util.h"

namespace graphrun::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kTol = 1e-10;

void expect_matches_reference(const char* name, const OpCall& call, double tol = kTol) {
    expect_kernel_matches_reference(name, call, tol);
}

OpCall rmsnorm_call(int64_t n_tokens, int64_t n, uint32_t seed) {
    OpCall c;
    c.in.push_back(f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -3, 3)));
    c.in.push_back(f32_tensor({n}, random_floats(size_t(n), seed + 1, 0.5f, 1.5f)));
    c.out = output_tensor(DType::F32, {n_tokens, n});
    c.params = OpParams::of(ops::RmsnormParams{.eps = 1e-5f});
    return c;
}

// ---- rmsnorm ----------------------------------------------------------------------------------------

TEST(OpsRmsnorm, MatchesReferenceOnOddShapes) {
    for (int64_t t : {1, 3, 7})
        for (int64_t n : {48, 72, 100, 5})
            expect_matches_reference("rmsnorm", rmsnorm_call(t, n, uint32_t(t * 1000 + n)));
}

TEST(OpsRmsnorm, HandComputedRow) {
    // x = (3, 4): mean of squares 12.5, so y = x / sqrt(12.5 + eps) * w.
    OpCall c;
    c.in = {f32_tensor({1, 2}, {3.0f, 4.0f}), f32_tensor({2}, {1.0f, 2.0f})};
    c.out = output_tensor(DType::F32, {1, 2});
    c.params = OpParams::of(ops::RmsnormParams{.eps = 0.5f});
    run_op(op_row("rmsnorm"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    EXPECT_NEAR(y[0], 3.0 / std::sqrt(13.0), 1e-6);
    EXPECT_NEAR(y[1], 8.0 / std::sqrt(13.0), 1e-6);
}

TEST(OpsRmsnorm, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("rmsnorm");
    OpCall c = rmsnorm_call(2, 64, 1);
    c.in[1] = f32_tensor({63}, random_floats(63, 2));
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("weight has 63 elements, input rows have 64"));
    c = rmsnorm_call(2, 64, 1);
    c.in[1] = f16_tensor({64}, random_floats(64, 2));
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("input 1 (weight) must be f32, got f16 (64)"));
    c = rmsnorm_call(2, 64, 1);
    c.in.pop_back();
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("expects 2 inputs (x, weight), got 1"));
    c = rmsnorm_call(2, 64, 1);
    c.in[0].shape = {128};
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("input 0 (x) must have rank 2"));
    EXPECT_THAT(infer_error(op, c.node("rmsnorm")), HasSubstr("[rmsnorm] node 'test.rmsnorm'"));
}

// ---- rope -------------------------------------------------------------------------------------------

OpCall rope_call(int64_t n_tokens, int n_head, int head_dim, int32_t first_pos, uint32_t seed) {
    OpCall c;
    const int64_t width = int64_t(n_head) * head_dim;
    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t) pos[size_t(t)] = first_pos + int32_t(t);
    c.in.push_back(f32_tensor({n_tokens, width}, random_floats(size_t(n_tokens * width), seed)));
    c.in.push_back(i32_tensor({n_tokens}, pos));
    c.out = output_tensor(DType::F32, {n_tokens, width});
    c.params = OpParams::of(ops::RopeParams{.n_head = n_head, .head_dim = head_dim, .base = 10000.0f});
    return c;
}

TEST(OpsRope, MatchesReferenceOnOddShapes) {
    for (int64_t t : {1, 3, 7})
        for (int hd : {8, 12, 64})
            for (int n_head : {1, 3, 6})
                expect_matches_reference(
                    "rope", rope_call(t, n_head, hd, 3 + int32_t(t), uint32_t(t * 100 + hd + n_head)));
}

TEST(OpsRope, HandComputedAngles) {
    // head_dim 4, base 10000: pair 0 turns by pos, pair 1 by pos * 10000^(-2/4) = pos / 100.
    OpCall c = rope_call(1, 1, 4, 2, 0);
    c.in[0] = f32_tensor({1, 4}, {1.0f, 0.0f, 0.0f, 1.0f});
    run_op(op_row("rope"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    EXPECT_NEAR(y[0], std::cos(2.0), 1e-6);
    EXPECT_NEAR(y[1], std::sin(2.0), 1e-6);
    EXPECT_NEAR(y[2], -std::sin(0.02), 1e-6);
    EXPECT_NEAR(y[3], std::cos(0.02), 1e-6);
}

TEST(OpsRope, CloseToClosedFormAtSmallPositions) {
    // ggml's repeated float product vs pos * base^(-2i/head_dim) in double: only float rounding apart.
    OpCall c = rope_call(7, 4, 64, 9, 77);
    run_op(op_row("rope"), c.args(), true);
    const std::vector<float> x = c.in[0].floats(), y = c.out.floats();
    std::vector<float> want(x.size());
    for (int64_t t = 0; t < 7; ++t)
        for (int h = 0; h < 4; ++h)
            for (int i = 0; i < 32; ++i) {
                const size_t j = size_t(t * 256 + h * 64 + 2 * i);
                const double theta = double(9 + t) * std::pow(10000.0, -2.0 * i / 64.0);
                want[j] = float(x[j] * std::cos(theta) - x[j + 1] * std::sin(theta));
                want[j + 1] = float(x[j] * std::sin(theta) + x[j + 1] * std::cos(theta));
            }
    EXPECT_LT(nmse(y, want), 1e-10);
}

TEST(OpsRope, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("rope");
    OpCall c = rope_call(3, 4, 8, 0, 1);
    edit_params<ops::RopeParams>(c.params, [](ops::RopeParams& p) { p.n_head = 5; });
    EXPECT_THAT(infer_error(op, c.node("rope")),
                HasSubstr("x rows have 32 elements, n_head 5 * head_dim 8 = 40"));
    c = rope_call(3, 4, 8, 0, 1);
    c.params = OpParams::of(ops::RopeParams{.n_head = 1, .head_dim = 7});
    c.in[0] = f32_tensor({3, 7}, random_floats(21, 1));
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("head_dim must be even"));
    c = rope_call(3, 4, 8, 0, 1);
    c.in[1] = f32_tensor({3}, {0, 1, 2});
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("input 1 (positions) must be i32, got f32 (3)"));
    c = rope_call(3, 4, 8, 0, 1);
    c.in[1] = i32_tensor({2}, {0, 1});
    EXPECT_THAT(infer_error(op, c.node("rope")), HasSubstr("positions has 2 entries, x has 3 tokens"));
}

// ---- swiglu and add ---------------------------------------------------------------------------------

OpCall binary_call(int64_t n_tokens, int64_t n, uint32_t seed) {
    OpCall c;
    c.in.push_back(f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed, -6, 6)));
    c.in.push_back(f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), seed + 1, -2, 2)));
    c.out = output_tensor(DType::F32, {n_tokens, n});
    return c;
}

TEST(OpsSwiglu, MatchesReferenceOnOddShapes) {
    for (int64_t t : {1, 3, 7})
        for (int64_t n : {48, 72, 100, 3})
            expect_matches_reference("swiglu", binary_call(t, n, uint32_t(t + n)));
}

TEST(OpsSwiglu, HandComputedValues) {
    OpCall c;
    c.in = {f32_tensor({1, 3}, {0.0f, 2.0f, -30.0f}), f32_tensor({1, 3}, {5.0f, 3.0f, 1.0f})};
    c.out = output_tensor(DType::F32, {1, 3});
    run_op(op_row("swiglu"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    EXPECT_EQ(y[0], 0.0f);
    EXPECT_NEAR(y[1], 2.0 / (1.0 + std::exp(-2.0)) * 3.0, 1e-6);
    EXPECT_NEAR(y[2], -30.0 / (1.0 + std::exp(30.0)), 1e-15);
}

TEST(OpsSwiglu, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("swiglu");
    OpCall c = binary_call(3, 10, 1);
    c.in[1] = f32_tensor({3, 11}, random_floats(33, 1));
    EXPECT_THAT(infer_error(op, c.node("swiglu")),
                HasSubstr("gate f32 (3, 10) and up f32 (3, 11) must have the same shape"));
    c = binary_call(3, 10, 1);
    c.in[0].dtype = DType::I32;
    EXPECT_THAT(infer_error(op, c.node("swiglu")), HasSubstr("input 0 (gate) must be f32, got i32 (3, 10)"));
}

TEST(OpsAdd, MatchesReferenceAndIsExact) {
    for (int64_t t : {1, 3, 7})
        for (int64_t n : {48, 72, 100, 1}) {
            const OpCall call = binary_call(t, n, uint32_t(7 * t + n));
            expect_matches_reference("add", call, 0.0 + 1e-30);
            OpCall c = call;
            run_op(op_row("add"), c.args(), true);
            const std::vector<float> a = c.in[0].floats(), b = c.in[1].floats(), y = c.out.floats();
            for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], a[i] + b[i]) << i;
        }
}

TEST(OpsAdd, AcceptsAnyRankAndRejectsMismatch) {
    const ops::OpDef& op = op_row("add");
    OpCall c = binary_call(3, 10, 1);
    c.in[0].shape = c.in[1].shape = {30};
    EXPECT_EQ(infer_error(op, c.node("add")), "");
    c = binary_call(3, 10, 1);
    c.in[1].shape = {10, 3};
    EXPECT_THAT(infer_error(op, c.node("add")),
                HasSubstr("inputs must have the same shape, got a f32 (3, 10) and b f32 (10, 3)"));
    c = binary_call(3, 10, 1);
    c.in.push_back(c.in[0]);
    EXPECT_THAT(infer_error(op, c.node("add")), HasSubstr("expects 2 inputs (a, b), got 3"));
}

// ---- embedding --------------------------------------------------------------------------------------

OpCall embedding_call(const TestTensor& table, const std::vector<int32_t>& ids) {
    OpCall c;
    c.in.push_back(i32_tensor({int64_t(ids.size())}, ids));
    c.in.push_back(table);
    c.out = output_tensor(DType::F32, {int64_t(ids.size()), table.shape[1]});
    return c;
}

// What row `id` of a table holds, decoded by hand from the bytes (not through the quant code).
std::vector<float> table_row(const TestTensor& table, int64_t id) {
    const int64_t n = table.shape[1];
    const uint8_t* row = table.bytes.data() + id * row_bytes(table.dtype, n);
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t* block = row + (i / 32) * dtype_traits(table.dtype).block_bytes;
        uint16_t d;
        std::memcpy(&d, block, 2);
        const int j = int(i % 32);
        switch (table.dtype) {
            case DType::F32:
                std::memcpy(&y[size_t(i)], row + i * 4, 4);
                break;
            case DType::F16: {
                uint16_t h;
                std::memcpy(&h, row + i * 2, 2);
                y[size_t(i)] = fp16_to_f32(h);
                break;
            }
            case DType::Q8_0:
                y[size_t(i)] = fp16_to_f32(d) * float(int8_t(block[2 + j]));
                break;
            case DType::Q4_0: {
                const int nibble = j < 16 ? (block[2 + j] & 15) : (block[2 + j - 16] >> 4);
                y[size_t(i)] = fp16_to_f32(d) * float(nibble - 8);
                break;
            }
            default:
                ADD_FAILURE() << "no such table type";
        }
    }
    return y;
}

TestTensor make_table(DType type, int64_t n_vocab, int64_t n_embd, uint32_t seed) {
    const std::vector<float> values = random_floats(size_t(n_vocab * n_embd), seed);
    if (type == DType::F32) return f32_tensor({n_vocab, n_embd}, values);
    if (type == DType::F16) return f16_tensor({n_vocab, n_embd}, values);
    std::vector<uint8_t> bytes(static_cast<size_t>(n_vocab * row_bytes(type, n_embd)));
    for (int64_t r = 0; r < n_vocab; ++r)
        ops::quant_traits(type)->quantize_row(&values[size_t(r * n_embd)],
                                              &bytes[size_t(r * row_bytes(type, n_embd))], n_embd);
    return raw_tensor(type, {n_vocab, n_embd}, bytes.data(), bytes.size());
}

TEST(OpsEmbedding, RowsDecodeLikeTheTableInEveryType) {
    const std::vector<int32_t> ids = {5, 0, 12, 5, 3, 12, 1};
    for (DType type : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
        for (int64_t n_embd : {32, 96}) {
            const TestTensor table = make_table(type, 13, n_embd, uint32_t(n_embd) + uint32_t(type));
            const OpCall call = embedding_call(table, ids);
            expect_matches_reference("embedding", call, 0.0 + 1e-30);
            OpCall c = call;
            run_op(op_row("embedding"), c.args(), true);
            const std::vector<float> y = c.out.floats();
            for (size_t t = 0; t < ids.size(); ++t) {
                const std::vector<float> want = table_row(table, ids[t]);
                for (int64_t i = 0; i < n_embd; ++i)
                    ASSERT_EQ(y[t * size_t(n_embd) + size_t(i)], want[size_t(i)])
                        << dtype_name(type) << " token " << t;
            }
        }
    }
}

// The other block types: every type with a dequantize_row is a valid table, and the lookup is that
// row's decoding (the decoders themselves are checked against ggml in tests/parity/quant_ggml_test.cpp).
TEST(OpsEmbedding, EveryTypeWithADecoderIsATable) {
    const std::vector<int32_t> ids = {2, 0, 2, 1};
    int types = 0;
    for (const DTypeTraits& t : dtype_table()) {
        const ops::QuantTraits* tr = ops::quant_traits(t.type);
        if (!tr || !tr->dequantize_row || t.type == DType::F32 || t.type == DType::F16) continue;
        const int64_t n_embd = 2 * t.block_size;
        const TestTensor table = make_table(t.type, 3, n_embd, 7);
        OpCall c = embedding_call(table, ids);
        expect_matches_reference("embedding", c, 0.0 + 1e-30);
        run_op(op_row("embedding"), c.args(), true);
        const std::vector<float> y = c.out.floats();
        for (size_t i = 0; i < ids.size(); ++i) {
            std::vector<float> want(static_cast<size_t>(n_embd));
            tr->dequantize_row(table.bytes.data() + ids[i] * row_bytes(t.type, n_embd), want.data(), n_embd);
            for (int64_t j = 0; j < n_embd; ++j)
                ASSERT_EQ(y[i * size_t(n_embd) + size_t(j)], want[size_t(j)]) << t.name;
        }
        ++types;
    }
    EXPECT_GE(types, 9);  // q4_0 .. q8_1, the K types and their Q8_K, iq4_xs
}

TEST(OpsEmbedding, OutOfRangeIdNeverReadsOutsideTheTable) {
    const TestTensor table = make_table(DType::F32, 4, 8, 3);
    OpCall c = embedding_call(table, {1, 4, -1, 2});
#ifdef NDEBUG
    // Release: the bad tokens' rows are NaN, the good ones are the table's.
    run_op(op_row("embedding"), c.args(), false);
    const std::vector<float> y = c.out.floats();
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(y[size_t(i)], table_row(table, 1)[size_t(i)]);
        EXPECT_TRUE(std::isnan(y[size_t(8 + i)]));
        EXPECT_TRUE(std::isnan(y[size_t(16 + i)]));
        EXPECT_EQ(y[size_t(24 + i)], table_row(table, 2)[size_t(i)]);
    }
#else
    EXPECT_DEATH(run_op(op_row("embedding"), c.args(), false), "id < n_vocab");
#endif
}

TEST(OpsEmbedding, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("embedding");
    OpCall c = embedding_call(make_table(DType::F32, 4, 8, 3), {1, 2});
    c.in[0].dtype = DType::F32;
    EXPECT_THAT(infer_error(op, c.node("embedding")), HasSubstr("input 0 (ids) must be i32, got f32 (2)"));
    c = embedding_call(make_table(DType::F32, 4, 8, 3), {1, 2});
    c.in[1].dtype = DType::I32;
    EXPECT_THAT(infer_error(op, c.node("embedding")),
                HasSubstr("input 1 (table) is i32 (4, 8): graphrun has no dequantize_row kernel for i32"));
    c = embedding_call(make_table(DType::F32, 4, 8, 3), {1, 2});
    c.in[1].dtype = DType::Q8_0;
    c.in[1].shape = {4, 40};
    EXPECT_THAT(infer_error(op, c.node("embedding")),
                HasSubstr("table rows have 40 elements, not a multiple of q8_0's block size 32"));
    c = embedding_call(make_table(DType::F32, 4, 8, 3), {1, 2});
    c.in[0].shape = {1, 2};
    EXPECT_THAT(infer_error(op, c.node("embedding")),
                HasSubstr("input 0 (ids) must have rank 1 (n_tokens), got i32 (1, 2)"));
}

// ---- select_rows ---------------------------------------------------------------------------------

OpCall select_call(int64_t n_tokens, int64_t n, const std::vector<int32_t>& rows) {
    OpCall c;
    c.in = {f32_tensor({n_tokens, n}, random_floats(size_t(n_tokens * n), 12)),
            i32_tensor({int64_t(rows.size())}, rows)};
    c.out = output_tensor(DType::F32, {int64_t(rows.size()), n});
    return c;
}

TEST(OpsSelectRows, CopiesTheAskedRowsInOrder) {
    for (const std::vector<int32_t>& rows :
         std::vector<std::vector<int32_t>>{{6}, {0, 3, 6}, {5, 5, 1, 0, 2, 4, 3}}) {
        const OpCall c = select_call(7, 37, rows);
        expect_kernel_matches_reference("select_rows", c, 0);
        OpCall run = c;
        run_op(op_row("select_rows"), run.args(), true);
        const std::vector<float> x = c.in[0].floats(), y = run.out.floats();
        for (size_t r = 0; r < rows.size(); ++r)
            for (int i = 0; i < 37; ++i)
                EXPECT_EQ(y[r * 37 + size_t(i)], x[size_t(rows[r]) * 37 + size_t(i)]);
    }
}

TEST(OpsSelectRows, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("select_rows");
    OpCall c = select_call(3, 8, {0, 1, 2, 2});
    EXPECT_THAT(infer_error(op, c.node("select_rows")), HasSubstr("selects 4 rows of 3"));
    c = select_call(3, 8, {1});
    c.in[1].dtype = DType::F32;
    EXPECT_THAT(infer_error(op, c.node("select_rows")), HasSubstr("input 1 (rows) must be i32"));
}

// ---- the table itself ---------------------------------------------------------------------------

// A graph names "matmul"; the planner picks the kernel later, so every kernel of one graph op must
// accept exactly the attributes the binder checked against the first row, and take the same input packed
// (the repack looks at the graph op).
TEST(OpTable, KernelsOfOneGraphOpDeclareTheSameAttributes) {
    for (const ops::OpDef* row : ops::op_table()) {
        const ops::OpDef* first = ops::find_graph_op(row->op_name());
        ASSERT_NE(first, nullptr) << row->name;
        EXPECT_EQ(row->attrs.data(), first->attrs.data()) << row->name << " vs " << first->name;
        EXPECT_EQ(row->attrs.size(), first->attrs.size()) << row->name;
        EXPECT_EQ(row->packed_input, first->packed_input) << row->name << " vs " << first->name;
        EXPECT_EQ(row->defaults.empty(), row->attrs.empty())
            << row->name << ": attributes need a defaults struct";
        EXPECT_NE(ops::find_op(row->name), nullptr) << row->name;
    }
}

TEST(OpTable, ParamsAreReadOnlyAsTheirOwnStruct) {
    const OpParams p = OpParams::of(ops::RopeParams{.n_head = 3, .head_dim = 8});
    EXPECT_EQ(p.get<ops::RopeParams>().head_dim, 8);
    EXPECT_TRUE(p.holds<ops::RopeParams>());
    EXPECT_THROW(p.get<ops::RmsnormParams>(), std::logic_error);
    EXPECT_TRUE(OpParams{}.empty());
}

TEST(OpTable, AttributeDeclarationsSetAndReadTheirField) {
    const ops::OpDef& rope = op_row("rope");
    ASSERT_EQ(rope.attrs.size(), 4u);
    OpParams p = rope.defaults;
    EXPECT_EQ(p.get<ops::RopeParams>().base, 10000.0f);
    p = rope.attrs[1].set(p, 64);  // head_dim
    EXPECT_EQ(p.get<ops::RopeParams>().head_dim, 64);
    EXPECT_EQ(rope.attrs[1].get(p), 64.0);
    EXPECT_EQ(ops::attr_value_text(rope.attrs[2], p), "10000");
    EXPECT_EQ(ops::attr_value_text(rope.attrs[3], p), "normal");  // mode, a choice: its word
    p = rope.attrs[3].set(p, 1);
    EXPECT_EQ(p.get<ops::RopeParams>().mode, ops::kRopeNeox);
    EXPECT_EQ(ops::attr_value_text(rope.attrs[3], p), "neox");
}

}  // namespace
}  // namespace graphrun::testing
