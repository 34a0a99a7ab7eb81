// tests/matmul_quant_test.cpp — matmul_q8 / matmul_q4: the op's prepare+run over split ranges
// against its plain-loop reference, plan-time errors, and the accuracy of Q8_0 / Q4_0 weights
// against the f32 matmul they stand in for (figures quoted in docs/quantization.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "ops/op_rows.h"
#include "ops/op_table.h"
#include "ops/quant_kernels.h"
#include "tests/quant_test_util.h"

namespace graphrun::ops {
namespace {

using ::testing::HasSubstr;
using testing::nmse;
using testing::QuantMatmul;

const OpDef& op_for(DType wtype) {
    const OpDef* op = find_op(wtype == DType::Q8_0 ? "matmul_q8" : "matmul_q4");
    EXPECT_NE(op, nullptr);
    return *op;
}

// The executor's calling pattern, with ranges split unevenly: prepare over tokens, then run over
// weight rows.
void run_split(const OpDef& op, const KernelArgs& a) {
    const int64_t tokens = op.prepare_items(a), rows = op.work_items(a);
    op.prepare(a, 0, tokens / 2);
    op.prepare(a, tokens / 2, tokens);
    op.run(a, 0, rows / 3);
    op.run(a, rows / 3, rows);
}

TEST(MatmulQuant, RunOverSplitRangesMatchesReference) {
    for (DType wtype : {DType::Q8_0, DType::Q4_0}) {
        const OpDef& op = op_for(wtype);
        for (int64_t k : {32, 96, 4096 + 32})
            for (auto [n_tokens, n] : {std::pair<int64_t, int64_t>{1, 37}, {3, 1}, {5, 19}, {17, 3}}) {
                if (k > 1000 && n_tokens > 5) continue;  // keep the test fast
                const auto wf = testing::random_values(size_t(n * k), testing::Dist::Normal, uint32_t(n + k));
                const auto xf =
                    testing::random_values(size_t(n_tokens * k), testing::Dist::StudentT3, uint32_t(k));
                QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
                QuantMatmul ref(wtype, n_tokens, n, k, wf, xf);
                EXPECT_EQ(op.work_items(m.args), n);
                EXPECT_EQ(op.prepare_items(m.args), n_tokens);
                run_split(op, m.args);
                op.reference(ref.args);
                // The kernel sums block products in float, the reference in double.
                EXPECT_LT(nmse(m.y, ref.y), 1e-12)
                    << dtype_name(wtype) << " tokens " << n_tokens << " N " << n << " K " << k;
                EXPECT_EQ(op.flops(m.args), 2.0 * double(n_tokens * n * k));
            }
    }
}

// The op's loop on each dot-product path (benchmarks time it the same way).
TEST(MatmulQuant, EveryPathThroughTheOpLoopMatchesReference) {
    const int64_t n_tokens = 3, n = 21, k = 160;
    for (DType wtype : {DType::Q8_0, DType::Q4_0}) {
        const bool q8 = wtype == DType::Q8_0;
        struct Path {
            bool available;
            VecDotFn dot;
            VecDot4Fn dot4;
        };
        const Path paths[] = {
            {true, q8 ? scalar::vec_dot_q8_0_q8_0 : scalar::vec_dot_q4_0_q8_0, nullptr},
            {cpu_features().avx2, q8 ? avx2::vec_dot_q8_0_q8_0 : avx2::vec_dot_q4_0_q8_0, nullptr},
            {cpu_features().avx512, q8 ? avx512::vec_dot_q8_0_q8_0 : avx512::vec_dot_q4_0_q8_0, nullptr},
            {cpu_features().avx512, q8 ? avx512::vec_dot_q8_0_q8_0 : avx512::vec_dot_q4_0_q8_0,
             q8 ? avx512::vec_dot4_q8_0_q8_0 : avx512::vec_dot4_q4_0_q8_0}};
        const auto wf = testing::random_uniform(size_t(n * k), 1);
        const auto xf = testing::random_uniform(size_t(n_tokens * k), 2);
        QuantMatmul ref(wtype, n_tokens, n, k, wf, xf);
        op_for(wtype).reference(ref.args);
        int i = 0;
        for (const Path& p : paths) {
            ++i;
            if (!p.available) continue;
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
            op_for(wtype).prepare(m.args, 0, n_tokens);
            // Ranges of 10 and 11 rows: two four-row steps and single rows at each end.
            matmul_quant_run_with(m.args, 0, 10, p.dot, p.dot4);
            matmul_quant_run_with(m.args, 10, n, p.dot, p.dot4);
            EXPECT_LT(nmse(m.y, ref.y), 1e-12) << dtype_name(wtype) << " path " << i;
        }
    }
}

// ---- plan time ----

NodeInfo matmul_node(std::vector<int64_t> x_shape, DType wtype, std::vector<int64_t> w_shape) {
    NodeInfo node;
    node.name = "blk.0.attn_q";
    node.op = "matmul";
    node.inputs = {{DType::F32, std::move(x_shape)}, {wtype, std::move(w_shape)}};
    return node;
}

std::string plan_error(const NodeInfo& node) {
    try {
        choose_kernel(node).infer(node);
    } catch (const PlanError& e) {
        return e.what();
    }
    return "(no PlanError)";
}

TEST(MatmulQuant, InferShapesAndScratch) {
    for (DType wtype : {DType::Q8_0, DType::Q4_0}) {
        const NodeInfo node = matmul_node({5, 4096}, wtype, {11008, 4096});
        const OpDef& op = choose_kernel(node);
        EXPECT_STREQ(op.name, wtype == DType::Q8_0 ? "matmul_q8" : "matmul_q4");
        const TensorDesc y = op.infer(node);
        EXPECT_EQ(y.dtype, DType::F32);
        EXPECT_EQ(y.shape, (std::vector<int64_t>{5, 11008}));
        EXPECT_EQ(op.scratch_bytes(node), 5 * (4096 / 32) * 34);
    }
}

TEST(MatmulQuant, PlanErrorsNameTheProblem) {
    EXPECT_THAT(plan_error(matmul_node({2, 40}, DType::Q8_0, {5, 40})),
                AllOf(HasSubstr("[matmul] node 'blk.0.attn_q'"), HasSubstr("40"), HasSubstr("multiple of"),
                      HasSubstr("block size 32")));
    EXPECT_THAT(plan_error(matmul_node({2, 40}, DType::Q4_0, {5, 40})), HasSubstr("q4_0 block size 32"));
    EXPECT_THAT(plan_error(matmul_node({2, 64}, DType::Q4_0, {5, 96})),
                AllOf(HasSubstr("rows of 64"), HasSubstr("rows of 96")));
    EXPECT_THAT(plan_error(matmul_node({2, 64}, DType::Q8_0, {2, 5, 64})),
                HasSubstr("expected a matrix (N, K)"));
    NodeInfo f16_x = matmul_node({2, 64}, DType::Q8_0, {5, 64});
    f16_x.inputs[0].dtype = DType::F16;
    EXPECT_THAT(plan_error(f16_x), HasSubstr("expected f32"));
    // A row with the wrong weight type (the planner would never pick it, but the row still checks).
    const NodeInfo q4_node = matmul_node({2, 64}, DType::Q4_0, {5, 64});
    EXPECT_THROW(find_op("matmul_q8")->infer(q4_node), PlanError);
}

// ---- accuracy against f32 weights ----

// y = x · Wᵀ in double from the unquantized f32 values.
std::vector<float> f32_matmul(const std::vector<float>& x, const std::vector<float>& w, int64_t t, int64_t n,
                              int64_t k) {
    std::vector<float> y(size_t(t * n));
    for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t c = 0; c < k; ++c) s += double(x[size_t(i * k + c)]) * double(w[size_t(j * k + c)]);
            y[size_t(i * n + j)] = float(s);
        }
    return y;
}

// NMSE against the f32 matmul, two ways: "weights" = dequantized weights · f32 activations (the
// weight format's own error); "as run" = the op itself, which also quantizes the activations to
// Q8_0. Activations are normal(0, 1) rows; bounds are about 2-3x the measured values, which
// docs/quantization.md lists.
TEST(MatmulQuant, AccuracyAgainstF32) {
    const int64_t n_tokens = 4, n = 96, k = 2048;
    struct Case {
        testing::Dist dist;
        double q8_weights, q8_run, q4_weights, q4_run;  // NMSE bounds
    };
    // Measured (this seed): q8_0 weights / as run, q4_0 weights / as run
    //   uniform 1.2e-5 / 4.0e-5, 4.5e-3 / 4.5e-3     normal   2.9e-5 / 6.5e-5, 6.8e-3 / 6.9e-3
    //   t(3)    7.8e-5 / 1.0e-4, 1.6e-2 / 1.6e-2     outliers 1.3e-4 / 1.5e-4, 2.0e-2 / 2.0e-2
    const Case cases[] = {{testing::Dist::Uniform, 3e-5, 1e-4, 1e-2, 1e-2},
                          {testing::Dist::Normal, 6e-5, 1.5e-4, 1.5e-2, 1.5e-2},
                          {testing::Dist::StudentT3, 2e-4, 2.5e-4, 4e-2, 4e-2},
                          {testing::Dist::NormalOutliers, 3e-4, 3e-4, 4e-2, 4e-2}};
    const auto xf = testing::random_values(size_t(n_tokens * k), testing::Dist::Normal, 200);
    for (const Case& c : cases) {
        const auto wf = testing::random_values(size_t(n * k), c.dist, 100);
        const std::vector<float> exact = f32_matmul(xf, wf, n_tokens, n, k);
        double weights_only[2], as_run[2];
        int i = 0;
        for (DType wtype : {DType::Q8_0, DType::Q4_0}) {
            QuantMatmul m(wtype, n_tokens, n, k, wf, xf);
            std::vector<float> wdq(wf.size());
            for (int64_t r = 0; r < n; ++r)
                dequantize_row(wtype, &m.w[size_t(r * row_bytes(wtype, k))], &wdq[size_t(r * k)], k);
            weights_only[i] = nmse(f32_matmul(xf, wdq, n_tokens, n, k), exact);
            run_split(op_for(wtype), m.args);
            as_run[i++] = nmse(m.y, exact);
        }
        std::printf(
            "[ accuracy ] weights %-24s q8_0 NMSE %.2e (weights) %.2e (as run)  "
            "q4_0 NMSE %.2e (weights) %.2e (as run)\n",
            testing::dist_name(c.dist), weights_only[0], as_run[0], weights_only[1], as_run[1]);
        EXPECT_LT(weights_only[0], c.q8_weights) << testing::dist_name(c.dist);
        EXPECT_LT(as_run[0], c.q8_run) << testing::dist_name(c.dist);
        EXPECT_LT(weights_only[1], c.q4_weights) << testing::dist_name(c.dist);
        EXPECT_LT(as_run[1], c.q4_run) << testing::dist_name(c.dist);
        EXPECT_LT(as_run[0], as_run[1] / 20) << "8 bits should beat 4 by far: " << testing::dist_name(c.dist);
    }
}

}  // namespace
}  // namespace graphrun::ops
