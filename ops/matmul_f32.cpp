// ops/matmul_f32.cpp — matmul with f32 or f16 weights.
//   x (n_tokens, K) f32 · W (N, K) f32|f16 ᵀ  ->  y (n_tokens, N) f32
//   y[t,n] = sum_k x[t,k] * W[n,k]
// Units: output columns n, i.e. weight rows, so each thread streams its own slice of the weights.
// Within a range, a tile of NR weight rows is dotted with NT token rows at once: each weight load
// serves NT tokens and each activation load NR rows. Tokens are taken in blocks of kTokenBlock so the
// activation rows stay in cache while the weight rows stream past.
// Paths: scalar, AVX2+FMA (+F16C for f16 weights), AVX-512F: one kernel per level in the row (run_at),
// which tests and benchmarks hold against each other through kMatmulF32Op.run.at(level).
#include <algorithm>
#include <cassert>

#include "ops/op_checks.h"
#include "ops/op_rows.h"
#include "ops/simd.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

constexpr int64_t kTokenBlock = 16;

inline float to_f32(float v) {
    return v;
}
inline float to_f32(uint16_t h) {
    return fp16_to_f32(h);
}

// The operands of one call, with the weight element type still open.
template <typename W>
struct MatmulView {
    const float* x;  // (T, K)
    const W* w;      // (N, K)
    float* y;        // (T, N)
    int64_t T, K, N;
};

// ---- scalar -------------------------------------------------------------------------------------

template <typename W>
void rows_scalar(const MatmulView<W>& m, int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
        const W* w = m.w + n * m.K;
        for (int64_t t = 0; t < m.T; ++t) {
            const float* x = m.x + t * m.K;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // four chains hide the add latency
            int64_t k = 0;
            for (; k + 4 <= m.K; k += 4) {
                s0 += x[k] * to_f32(w[k]);
                s1 += x[k + 1] * to_f32(w[k + 1]);
                s2 += x[k + 2] * to_f32(w[k + 2]);
                s3 += x[k + 3] * to_f32(w[k + 3]);
            }
            for (; k < m.K; ++k) s0 += x[k] * to_f32(w[k]);
            m.y[t * m.N + n] = (s0 + s1) + (s2 + s3);
        }
    }
}

// ---- AVX2 + FMA (+ F16C) -------------------------------------------------------------------------

GR_AVX2 inline __m256 load8(const float* p) {
    return _mm256_loadu_ps(p);
}
GR_AVX2 inline __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

GR_AVX2 inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// y[t0..t0+NT, n0..n0+NR] for one tile; x, w, y point at the tile's first row/column.
template <typename W, int NR, int NT>
GR_AVX2 void tile_avx2(const MatmulView<W>& m, const float* x, const W* w, float* y) {
    __m256 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
        for (int c = 0; c < NT; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= m.K; k += 8) {
        __m256 wv[NR];
        for (int r = 0; r < NR; ++r) wv[r] = load8(w + r * m.K + k);
        for (int c = 0; c < NT; ++c) {
            const __m256 xv = _mm256_loadu_ps(x + c * m.K + k);
            for (int r = 0; r < NR; ++r) acc[r][c] = _mm256_fmadd_ps(wv[r], xv, acc[r][c]);
        }
    }
    for (int r = 0; r < NR; ++r) {
        for (int c = 0; c < NT; ++c) {
            float s = hsum8(acc[r][c]);
            for (int64_t kk = k; kk < m.K; ++kk) s += x[c * m.K + kk] * to_f32(w[r * m.K + kk]);
            y[c * m.N + r] = s;
        }
    }
}

template <typename W>
GR_AVX2 void rows_avx2(const MatmulView<W>& m, int64_t begin, int64_t end) {
    constexpr int NR = 4, NT = 2;  // 8 accumulators + 4 weight vectors + 1 activation: fits 16 ymm
    for (int64_t tb = 0; tb < m.T; tb += kTokenBlock) {
        const int64_t te = std::min(m.T, tb + kTokenBlock);
        int64_t n = begin;
        for (; n + NR <= end; n += NR) {
            int64_t t = tb;
            for (; t + NT <= te; t += NT)
                tile_avx2<W, NR, NT>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
            for (; t < te; ++t) tile_avx2<W, NR, 1>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
        }
        for (; n < end; ++n)
            for (int64_t t = tb; t < te; ++t)
                tile_avx2<W, 1, 1>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
    }
}

// ---- AVX-512F ------------------------------------------------------------------------------------

GR_AVX512 inline __m512 load16(const float* p) {
    return _mm512_loadu_ps(p);
}
GR_AVX512 inline __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

template <typename W, int NR, int NT>
GR_AVX512 void tile_avx512(const MatmulView<W>& m, const float* x, const W* w, float* y) {
    __m512 acc[NR][NT];
    for (int r = 0; r < NR; ++r)
        for (int c = 0; c < NT; ++c) acc[r][c] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= m.K; k += 16) {
        __m512 wv[NR];
        for (int r = 0; r < NR; ++r) wv[r] = load16(w + r * m.K + k);
        for (int c = 0; c < NT; ++c) {
            const __m512 xv = _mm512_loadu_ps(x + c * m.K + k);
            for (int r = 0; r < NR; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], xv, acc[r][c]);
        }
    }
    for (int r = 0; r < NR; ++r) {
        for (int c = 0; c < NT; ++c) {
            float s = _mm512_reduce_add_ps(acc[r][c]);
            for (int64_t kk = k; kk < m.K; ++kk) s += x[c * m.K + kk] * to_f32(w[r * m.K + kk]);
            y[c * m.N + r] = s;
        }
    }
}

template <typename W>
GR_AVX512 void rows_avx512(const MatmulView<W>& m, int64_t begin, int64_t end) {
    constexpr int NR = 4, NT = 4;  // 16 accumulators + 4 weight vectors + 1 activation of 32 zmm
    for (int64_t tb = 0; tb < m.T; tb += kTokenBlock) {
        const int64_t te = std::min(m.T, tb + kTokenBlock);
        int64_t n = begin;
        for (; n + NR <= end; n += NR) {
            int64_t t = tb;
            for (; t + NT <= te; t += NT)
                tile_avx512<W, NR, NT>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
            for (; t < te; ++t) tile_avx512<W, NR, 1>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
        }
        for (; n < end; ++n)
            for (int64_t t = tb; t < te; ++t)
                tile_avx512<W, 1, 1>(m, m.x + t * m.K, m.w + n * m.K, m.y + t * m.N + n);
    }
}

// ---- dispatch ------------------------------------------------------------------------------------

template <typename W>
MatmulView<W> view_of(const KernelArgs& args) {
    return {args.in[0].as<float>(), static_cast<const W*>(args.in[1].data),
            args.out.as<float>(),   args.in[0].rows(),
            args.in[0].cols(),      args.in[1].dim(0)};
}

// One kernel per level: x (n_tokens, K) f32 · W (N, K)ᵀ f32 or f16 -> y, weight rows [begin, end).
template <void (*Rows32)(const MatmulView<float>&, int64_t, int64_t),
          void (*Rows16)(const MatmulView<uint16_t>&, int64_t, int64_t)>
void run_at(const KernelArgs& args, int64_t begin, int64_t end) {
    assert(0 <= begin && begin <= end && end <= args.in[1].dim(0));
    if (args.in[1].dtype == DType::F16)
        Rows16(view_of<uint16_t>(args), begin, end);
    else
        Rows32(view_of<float>(args), begin, end);
}

TensorDesc matmul_f32_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, weight");
    check_dtype(node, 0, "x", DType::F32);
    check_dtype_in(node, 1, "weight", {DType::F32, DType::F16});
    check_rank(node, 0, "x", 2, "(n_tokens, K)");
    check_rank(node, 1, "weight", 2, "(N, K)");
    const TensorDesc &x = node.inputs[0], &w = node.inputs[1];
    if (w.shape[1] != x.shape[1])
        throw PlanError(node, "weight rows have " + std::to_string(w.shape[1]) + " elements, x rows have " +
                                  std::to_string(x.shape[1]));
    return {DType::F32, {x.shape[0], w.shape[0]}};
}

int64_t matmul_f32_work_items(const KernelArgs& args) {
    return args.in[1].dim(0);
}

void matmul_f32_reference(const KernelArgs& args) {
    const int64_t T = args.in[0].rows(), K = args.in[0].cols(), N = args.in[1].dim(0);
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t n = 0; n < N; ++n) {
            double sum = 0;
            for (int64_t k = 0; k < K; ++k) {
                const float w = args.in[1].dtype == DType::F16
                                    ? fp16_to_f32(args.in[1].as<uint16_t>()[n * K + k])
                                    : args.in[1].as<float>()[n * K + k];
                sum += double(args.in[0].as<float>()[t * K + k]) * double(w);
            }
            args.out.as<float>()[t * N + n] = float(sum);
        }
    }
}

double matmul_f32_flops(const KernelArgs& args) {
    return 2.0 * double(args.in[0].rows()) * double(args.in[1].dim(0)) * double(args.in[0].cols());
}

}  // namespace

const OpDef kMatmulF32Op = {
    .name = "matmul_f32",
    .graph_op = "matmul",
    .n_inputs = 2,
    .packed_input = 1,  // as every kernel of "matmul"; no float type has a packed layout
    .infer = matmul_f32_infer,
    .work_items = matmul_f32_work_items,
    .grain = 16,
    .run = {.scalar = run_at<rows_scalar<float>, rows_scalar<uint16_t>>,
            .avx2 = run_at<rows_avx2<float>, rows_avx2<uint16_t>>,
            .avx512 = run_at<rows_avx512<float>, rows_avx512<uint16_t>>},
    .reference = matmul_f32_reference,
    .flops = matmul_f32_flops,
};

}  // namespace graphrun::ops
