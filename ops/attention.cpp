// ops/attention.cpp — causal self-attention over the KV cache, grouped-query heads.
//   q (n_tokens, n_head * hd), k (n_tokens, n_head_kv * hd), v (n_tokens, n_head_kv * hd),
//   positions (n_tokens) i32, KV cache layer k, v (n_ctx, n_head_kv * hd)  ->  out (n_tokens, n_head * hd)
//   prepare: cache.k[positions[t]] = k[t], cache.v[positions[t]] = v[t]
//   run, for token t and query head h, kv head g = h / (n_head / n_head_kv) (llama.cpp's GQA mapping):
//     s_p = q[t,h] · cache.k[p, g] / sqrt(hd)                 for p = 0 .. positions[t] (causal)
//     out[t,h] = sum_p softmax(s)_p * cache.v[p, g]
// Units: prepare over tokens; run over (t, h) pairs, unit u = t * n_head + h. prepare finishes for every
// token before run starts, so a token of the batch sees the rows earlier tokens of the same batch wrote.
// No scratch: the softmax is computed online (running max and sum), accumulating straight into the
// output row and rescaling it whenever the max grows.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/op_checks.h"
#include "ops/op_rows.h"

namespace graphrun::ops {

namespace {

// ---- the two vector loops, scalar and AVX2 ---------------------------------------------------------

float dot_scalar(const float* a, const float* b, int64_t n) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; ++i) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

// o = o * a + b * v
void scale_add_scalar(float* o, float a, float b, const float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = o[i] * a + b * v[i];
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    const __m256 acc = _mm256_add_ps(acc0, acc1);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    float sum = _mm_cvtss_f32(s);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

__attribute__((target("avx2,fma"))) void scale_add_avx2(float* o, float a, float b, const float* v,
                                                        int64_t n) {
    const __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(
            o + i, _mm256_fmadd_ps(_mm256_loadu_ps(o + i), av, _mm256_mul_ps(bv, _mm256_loadu_ps(v + i))));
    for (; i < n; ++i) o[i] = o[i] * a + b * v[i];
}

struct AttentionLoops {
    float (*dot)(const float*, const float*, int64_t);
    void (*scale_add)(float*, float, float, const float*, int64_t);
};

const AttentionLoops& attention_loops() {
    static const AttentionLoops loops = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            return AttentionLoops{dot_avx2, scale_add_avx2};
        return AttentionLoops{dot_scalar, scale_add_scalar};
    }();
    return loops;
}

}  // namespace

TensorDesc attention_infer(const NodeInfo& node) {
    check_input_count(node, 4, "q, k, v, positions");
    check_dtype(node, 0, "q", DType::F32);
    check_dtype(node, 1, "k", DType::F32);
    check_dtype(node, 2, "v", DType::F32);
    check_dtype(node, 3, "positions", DType::I32);
    check_rank(node, 0, "q", 2, "(n_tokens, n_head * head_dim)");
    check_rank(node, 1, "k", 2, "(n_tokens, n_head_kv * head_dim)");
    check_rank(node, 2, "v", 2, "(n_tokens, n_head_kv * head_dim)");
    check_rank(node, 3, "positions", 1, "(n_tokens)");
    const OpParams& p = node.params;
    if (p.n_head <= 0 || p.n_head_kv <= 0 || p.head_dim <= 0)
        throw PlanError(node, "n_head, n_head_kv and head_dim must be > 0, got n_head " +
                                  std::to_string(p.n_head) + ", n_head_kv " + std::to_string(p.n_head_kv) +
                                  ", head_dim " + std::to_string(p.head_dim));
    if (p.n_head % p.n_head_kv != 0)
        throw PlanError(node, "n_head " + std::to_string(p.n_head) + " is not a multiple of n_head_kv " +
                                  std::to_string(p.n_head_kv));
    if (p.layer < 0)
        throw PlanError(node, "layer must be >= 0 (the KV cache layer), got " + std::to_string(p.layer));
    const int64_t n_tokens = node.inputs[0].shape[0];
    const int64_t q_width = int64_t(p.n_head) * p.head_dim, kv_width = int64_t(p.n_head_kv) * p.head_dim;
    const char* names[] = {"q", "k", "v"};
    const int64_t widths[] = {q_width, kv_width, kv_width};
    for (int i = 0; i < 3; ++i) {
        const TensorDesc& t = node.inputs[i];
        if (t.shape[1] != widths[i])
            throw PlanError(node, std::string(names[i]) + " rows have " + std::to_string(t.shape[1]) +
                                      " elements, expected " + std::to_string(widths[i]) + " (" +
                                      (i == 0 ? "n_head " : "n_head_kv ") +
                                      std::to_string(i == 0 ? p.n_head : p.n_head_kv) + " * head_dim " +
                                      std::to_string(p.head_dim) + ")");
        if (t.shape[0] != n_tokens)
            throw PlanError(node, std::string(names[i]) + " has " + std::to_string(t.shape[0]) +
                                      " tokens, q has " + std::to_string(n_tokens));
    }
    if (node.inputs[3].shape[0] != n_tokens)
        throw PlanError(node, "positions has " + std::to_string(node.inputs[3].shape[0]) +
                                  " entries, q has " + std::to_string(n_tokens) + " tokens");
    return {DType::F32, node.inputs[0].shape};
}

int64_t attention_prepare_items(const KernelArgs& args) {
    return args.in[0].rows();
}

void attention_prepare(const KernelArgs& args, int64_t begin, int64_t end) {
    const KvLayer& kv = args.kv;
    const int32_t* positions = args.in[3].as<int32_t>();
    assert(kv.row == args.in[1].cols());
    for (int64_t t = begin; t < end; ++t) {
        const int64_t p = positions[t];
        assert(0 <= p && p < kv.n_ctx);  // the session validates positions before running
        std::memcpy(kv.k + p * kv.row, args.in[1].as<float>() + t * kv.row, size_t(kv.row) * sizeof(float));
        std::memcpy(kv.v + p * kv.row, args.in[2].as<float>() + t * kv.row, size_t(kv.row) * sizeof(float));
    }
}

int64_t attention_work_items(const KernelArgs& args) {
    return args.in[0].rows() * args.params.n_head;
}

void attention_run(const KernelArgs& args, int64_t begin, int64_t end) {
    const AttentionLoops& loops = attention_loops();
    const int n_head = args.params.n_head, hd = args.params.head_dim;
    const int group = n_head / args.params.n_head_kv;
    const KvLayer& kv = args.kv;
    const float scale = 1.0f / std::sqrt(float(hd));
    const int32_t* positions = args.in[3].as<int32_t>();
    for (int64_t u = begin; u < end; ++u) {
        const int64_t t = u / n_head;
        const int h = int(u % n_head);
        const int64_t kv_offset = int64_t(h / group) * hd;
        const float* q = args.in[0].as<float>() + t * n_head * hd + int64_t(h) * hd;
        float* o = args.out.as<float>() + t * n_head * hd + int64_t(h) * hd;
        const int64_t last = positions[t];
        assert(0 <= last && last < kv.n_ctx);
        // Position 0 starts the running max and sum; o holds sum_p exp(s_p - max) * v_p.
        float max = loops.dot(q, kv.k + kv_offset, hd) * scale;
        float sum = 1.0f;
        std::memcpy(o, kv.v + kv_offset, size_t(hd) * sizeof(float));
        for (int64_t p = 1; p <= last; ++p) {
            const float s = loops.dot(q, kv.k + p * kv.row + kv_offset, hd) * scale;
            const float* v = kv.v + p * kv.row + kv_offset;
            if (s > max) {
                const float correction = std::exp(max - s);  // what the old terms are worth now
                sum = sum * correction + 1.0f;
                loops.scale_add(o, correction, 1.0f, v, hd);
                max = s;
            } else {
                const float w = std::exp(s - max);
                sum += w;
                loops.scale_add(o, 1.0f, w, v, hd);
            }
        }
        const float inv = 1.0f / sum;
        for (int i = 0; i < hd; ++i) o[i] *= inv;
    }
}

// The plain way: write the cache, then per (t, h) a scores array, its max, exp, normalise, weighted sum.
void attention_reference(const KernelArgs& args) {
    const int64_t n_tokens = args.in[0].rows();
    const int n_head = args.params.n_head, hd = args.params.head_dim, n_head_kv = args.params.n_head_kv;
    const KvLayer& kv = args.kv;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int64_t p = args.in[3].as<int32_t>()[t];
        for (int64_t i = 0; i < kv.row; ++i) {
            kv.k[p * kv.row + i] = args.in[1].as<float>()[t * kv.row + i];
            kv.v[p * kv.row + i] = args.in[2].as<float>()[t * kv.row + i];
        }
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int64_t n_pos = args.in[3].as<int32_t>()[t] + 1;
        for (int h = 0; h < n_head; ++h) {
            const int g = h / (n_head / n_head_kv);
            const float* q = args.in[0].as<float>() + (t * n_head + h) * hd;
            std::vector<double> scores(n_pos);
            for (int64_t p = 0; p < n_pos; ++p) {
                double dot = 0;
                for (int i = 0; i < hd; ++i) dot += double(q[i]) * kv.k[p * kv.row + int64_t(g) * hd + i];
                scores[p] = dot / std::sqrt(double(hd));
            }
            double max = scores[0];
            for (double s : scores) max = std::max(max, s);
            double total = 0;
            for (double& s : scores) total += (s = std::exp(s - max));
            for (int i = 0; i < hd; ++i) {
                double acc = 0;
                for (int64_t p = 0; p < n_pos; ++p)
                    acc += scores[p] / total * kv.v[p * kv.row + int64_t(g) * hd + i];
                args.out.as<float>()[(t * n_head + h) * hd + i] = float(acc);
            }
        }
    }
}

// 4 * hd per (query head, attended position): the q·k dot and the weighted v sum. The attended
// positions are read from `positions` when it has data (clamped to the cache); at plan time, before
// the positions exist, a fresh prompt (positions 0 .. n_tokens-1) is assumed.
double attention_flops(const KernelArgs& args) {
    const int64_t n_tokens = args.in[0].rows();
    double attended = 0;
    for (int64_t t = 0; t < n_tokens; ++t) {
        int64_t last = t;
        if (args.in[3].data) {
            last = args.in[3].as<int32_t>()[t];
            if (args.kv.n_ctx > 0) last = std::min<int64_t>(std::max<int64_t>(last, 0), args.kv.n_ctx - 1);
        }
        attended += double(last + 1);
    }
    return 4.0 * double(args.params.head_dim) * double(args.params.n_head) * attended;
}

}  // namespace graphrun::ops
