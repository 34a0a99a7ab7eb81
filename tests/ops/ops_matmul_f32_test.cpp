// tests/ops/ops_matmul_f32_test.cpp — matmul_f32: every SIMD path this CPU has against the scalar path and
// the double-accumulating reference, f32 and f16 weights, odd shapes and odd column ranges.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <array>
#include <cmath>
#include <cstring>

#include "ops/op_rows.h"
#include "tests/common/op_test_util.h"

namespace graphrun::testing {
namespace {

using ops::SimdLevel;
using ::testing::HasSubstr;

constexpr SimdLevel kPaths[] = {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512};

OpCall matmul_call(int64_t n_tokens, int64_t k, int64_t n, DType wtype, uint32_t seed) {
    OpCall c;
    c.in.push_back(f32_tensor({n_tokens, k}, random_floats(size_t(n_tokens * k), seed)));
    const std::vector<float> w = random_floats(size_t(n * k), seed + 1);
    c.in.push_back(wtype == DType::F16 ? f16_tensor({n, k}, w) : f32_tensor({n, k}, w));
    c.out = output_tensor(DType::F32, {n_tokens, n});
    return c;
}

std::vector<float> run_path(SimdLevel path, OpCall c, const std::vector<int64_t>& cuts) {
    const KernelArgs args = c.args();
    const int64_t n = args.in[1].dim(0);
    int64_t begin = 0;
    for (int64_t cut : cuts) {
        ops::kMatmulF32Op.run.at(path)(args, begin, cut);
        begin = cut;
    }
    ops::kMatmulF32Op.run.at(path)(args, begin, n);
    return c.out.floats();
}

TEST(OpsMatmulF32, EveryPathMatchesReferenceOnOddShapes) {
    const ops::OpDef& op = op_row("matmul_f32");
    int paths_run = 0;
    for (SimdLevel path : kPaths) {
        if (!ops::simd_level_available(path)) continue;
        ++paths_run;
        for (DType wtype : {DType::F32, DType::F16})
            for (int64_t t : {1, 3, 7, 19})
                for (int64_t k : {48, 72, 100, 5})
                    for (int64_t n : {13, 37}) {
                        OpCall call = matmul_call(t, k, n, wtype, uint32_t(t * 7 + k * 3 + n));
                        OpCall ref = call;
                        op.reference(ref.args());
                        const std::vector<float> want = ref.out.floats();
                        SCOPED_TRACE(std::string(ops::simd_level_name(path)) + " " + dtype_name(wtype) +
                                     " T=" + std::to_string(t) + " K=" + std::to_string(k) +
                                     " N=" + std::to_string(n));
                        EXPECT_LT(nmse(run_path(path, call, {}), want), 1e-10);
                        EXPECT_LT(nmse(run_path(path, call, {2, 7, 9}), want), 1e-10);
                        EXPECT_LT(nmse(run_path(path, call, {0, 1, n}), want), 1e-10);
                        EXPECT_LT(nmse(run_path(path, call, {}), run_path(SimdLevel::Scalar, call, {})),
                                  1e-10);
                    }
    }
    EXPECT_GE(paths_run, 1);
}

// An independent reference that shares no code with graphrun: Eigen's product in double of the same
// inputs (f16 weights widened exactly). Every path, odd shapes, against it.
TEST(OpsMatmulF32, EveryPathAgreesWithEigenInDouble) {
    using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    for (SimdLevel path : kPaths) {
        if (!ops::simd_level_available(path)) continue;
        for (DType wtype : {DType::F32, DType::F16})
            for (auto [t, k, n] : {std::array<int64_t, 3>{1, 100, 37}, {7, 5, 13}, {19, 72, 64}}) {
                const OpCall call = matmul_call(t, k, n, wtype, uint32_t(t + k + n));
                Matrix x(t, k), w(n, k);
                const std::vector<float> xf = call.in[0].floats();
                for (int64_t i = 0; i < t * k; ++i) x.data()[i] = xf[size_t(i)];
                const auto* w_bytes = call.in[1].bytes.data();
                for (int64_t i = 0; i < n * k; ++i) {
                    float v;
                    if (wtype == DType::F16) {
                        uint16_t h;
                        std::memcpy(&h, w_bytes + 2 * i, 2);
                        v = fp16_to_f32(h);
                    } else {
                        std::memcpy(&v, w_bytes + 4 * i, 4);
                    }
                    w.data()[i] = v;
                }
                const Matrix y = x * w.transpose();
                const std::vector<float> want(y.data(), y.data() + t * n);
                EXPECT_LT(nmse(run_path(path, call, {2, 7}), want), 1e-10)
                    << ops::simd_level_name(path) << " " << dtype_name(wtype) << " T=" << t << " K=" << k << " N=" << n;
            }
    }
}

TEST(OpsMatmulF32, TableKernelUsesBestPathAndMatchesReference) {
    const ops::OpDef& op = op_row("matmul_f32");
    for (DType wtype : {DType::F32, DType::F16}) {
        OpCall call = matmul_call(5, 136, 70, wtype, 11);
        EXPECT_EQ(op.infer(call.node("matmul")).shape, (std::vector<int64_t>{5, 70}));
        EXPECT_EQ(op.work_items(call.args()), 70);
        EXPECT_EQ(op.flops(call.args()), 2.0 * 5 * 70 * 136);
        OpCall ref = call;
        op.reference(ref.args());
        run_op(op, call.args(), true);
        EXPECT_LT(nmse(call.out.floats(), ref.out.floats()), 1e-10) << dtype_name(wtype);
    }
}

TEST(OpsMatmulF32, WritesOnlyItsColumns) {
    for (SimdLevel path : kPaths) {
        if (!ops::simd_level_available(path)) continue;
        OpCall c = matmul_call(3, 40, 23, DType::F32, 5);
        ops::kMatmulF32Op.run.at(path)(c.args(), 6, 17);
        const std::vector<float> y = c.out.floats();
        for (int64_t t = 0; t < 3; ++t)
            for (int64_t n = 0; n < 23; ++n)
                EXPECT_EQ(std::isnan(y[size_t(t * 23 + n)]), n < 6 || n >= 17)
                    << ops::simd_level_name(path) << " t=" << t << " n=" << n;
    }
}

TEST(OpsMatmulF32, F16WeightsAreTheRoundedValues) {
    // The f16 result equals the f32 kernel on the f16-rounded weights (up to summation order).
    OpCall half = matmul_call(3, 64, 9, DType::F16, 21);
    OpCall full = half;
    std::vector<float> rounded(static_cast<size_t>(9 * 64));
    for (size_t i = 0; i < rounded.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, half.in[1].bytes.data() + 2 * i, 2);
        rounded[i] = fp16_to_f32(h);
    }
    full.in[1] = f32_tensor({9, 64}, rounded);
    run_op(op_row("matmul_f32"), half.args(), false);
    run_op(op_row("matmul_f32"), full.args(), false);
    EXPECT_LT(nmse(half.out.floats(), full.out.floats()), 1e-12);
}

TEST(OpsMatmulF32, InferRejectsBadInputs) {
    const ops::OpDef& op = op_row("matmul_f32");
    OpCall c = matmul_call(2, 64, 8, DType::F32, 1);
    c.in[1].shape = {8, 63};
    EXPECT_THAT(infer_error(op, c.node("matmul")), HasSubstr("weight rows have 63 elements, x rows have 64"));
    c = matmul_call(2, 64, 8, DType::F32, 1);
    c.in[1].dtype = DType::Q8_0;
    EXPECT_THAT(infer_error(op, c.node("matmul")), HasSubstr("input 1 (weight) must be f32/f16, got q8_0"));
    c = matmul_call(2, 64, 8, DType::F32, 1);
    c.in[0].dtype = DType::F16;
    EXPECT_THAT(infer_error(op, c.node("matmul")), HasSubstr("input 0 (x) must be f32, got f16 (2, 64)"));
    c = matmul_call(2, 64, 8, DType::F32, 1);
    c.in[1].shape = {512};
    EXPECT_THAT(infer_error(op, c.node("matmul")), HasSubstr("input 1 (weight) must have rank 2 (N, K)"));
}

}  // namespace
}  // namespace graphrun::testing
