// bench/eigen/invariance_check.cpp — does Eigen's f32 product keep graphrun's batch invariance, and
// how fast is it next to graphrun's matmul_f32 (docs/performance.md, "Eigen for the F32/F16 matmul?").
//   X (T, K) · W (N, K)ᵀ -> Y (T, N), T = 1..512, random f32 data
// For each T it counts the outputs of token 0 that are not the same bits as with T = 1 (and, for
// Eigen, T = 2); then GFLOP/s of both on one thread, alternated 9 times, median.
// Not part of the CMake build (an opt-in check; graphrun_bench globs only bench/*.cpp). After
// building the libraries (cmake --build build --target graphrun):
//   g++ -std=c++20 -O2 -mavx2 -mfma -mf16c -DEIGEN_DONT_PARALLELIZE -isystem /usr/include/eigen3 -I.
//       bench/eigen/invariance_check.cpp build/libgraphrun_ops.a build/libgraphrun_runtime.a
//       -ltbb -licuuc -o /tmp/invariance_check      (one command line)
//   /tmp/invariance_check 2048 2048                   (N K)
#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ops/op_rows.h"
#include "tests/common/quant_test_util.h"  // tensor_ref

using namespace graphrun;
using graphrun::ops::testing::tensor_ref;
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int differing(const float* a, const float* b, int64_t n) {
    int count = 0;
    for (int64_t i = 0; i < n; ++i) count += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
    return count;
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t N = argc > 1 ? std::atoll(argv[1]) : 2048, K = argc > 2 ? std::atoll(argv[2]) : 2048;
    const int64_t max_tokens = 512;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1, 1);
    RowMatrix W(N, K), X(max_tokens, K);
    for (int64_t i = 0; i < N * K; ++i) W.data()[i] = uniform(rng);
    for (int64_t i = 0; i < max_tokens * K; ++i) X.data()[i] = uniform(rng);

    KernelArgs args;
    args.n_in = 2;
    auto graphrun_matmul = [&](int64_t T, float* y) {
        args.in[0] = tensor_ref(DType::F32, {T, K}, X.data());
        args.in[1] = tensor_ref(DType::F32, {N, K}, W.data());
        args.out = tensor_ref(DType::F32, {T, N}, y);
        ops::kMatmulF32Op.run.at(ops::active_simd_level())(args, 0, N);
    };
    const RowMatrix eigen_t1 = X.topRows(1) * W.transpose(), eigen_t2 = X.topRows(2) * W.transpose();
    std::vector<float> graphrun_t1(static_cast<size_t>(N));
    graphrun_matmul(1, graphrun_t1.data());

    std::printf("N=%lld K=%lld, Eigen %d.%d.%d (%s), graphrun path %s\n", (long long)N, (long long)K,
                EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, Eigen::SimdInstructionSetsInUse(),
                ops::simd_level_name(ops::active_simd_level()));
    std::printf("token 0's outputs that differ from the same product with fewer tokens (of %lld)\n", (long long)N);
    std::printf("%6s %14s %14s %17s\n", "T", "Eigen vs T=1", "Eigen vs T=2", "graphrun vs T=1");
    for (int64_t T : {1, 2, 3, 4, 7, 8, 16, 32, 64, 128, 512}) {
        const RowMatrix Y = X.topRows(T) * W.transpose();
        std::vector<float> y(static_cast<size_t>(T * N));
        graphrun_matmul(T, y.data());
        std::printf("%6lld %14d %14d %17d\n", (long long)T, differing(Y.data(), eigen_t1.data(), N),
                    differing(Y.data(), eigen_t2.data(), N), differing(y.data(), graphrun_t1.data(), N));
    }

    std::printf("\none thread, alternated 9 times, median\n%6s %14s %17s\n", "T", "Eigen GFLOP/s", "graphrun GFLOP/s");
    for (int64_t T : {1, 32, 128, 512}) {
        RowMatrix Y(T, N);
        std::vector<float> y(static_cast<size_t>(T * N));
        std::vector<double> eigen_s, graphrun_s;
        for (int r = 0; r < 9; ++r) {
            const double t0 = now_s();
            Y.noalias() = X.topRows(T) * W.transpose();
            const double t1 = now_s();
            graphrun_matmul(T, y.data());
            eigen_s.push_back(t1 - t0), graphrun_s.push_back(now_s() - t1);
        }
        std::sort(eigen_s.begin(), eigen_s.end()), std::sort(graphrun_s.begin(), graphrun_s.end());
        const double flop = 2.0 * double(T * N * K);
        std::printf("%6lld %14.1f %17.1f\n", (long long)T, flop / eigen_s[4] / 1e9, flop / graphrun_s[4] / 1e9);
    }
}
