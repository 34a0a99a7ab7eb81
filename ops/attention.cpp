// ops/attention.cpp — causal self-attention over the paged f16 KV cache, grouped-query heads, with the
// numerics of llama.cpp's CPU flash attention.
//   q (n_tokens, n_head * hd) f32,
//   k_cache, v_cache (n_slots, n_head_kv * hd) f16: planned state, this layer's K and V, written by
//     kv_write nodes before this one (so a token sees the rows of earlier tokens of the same batch),
//   positions (n_tokens) i32, kv_table (n_tokens, table_width) i32: each token's sequence's block table
//     ->  out (n_tokens, n_head * hd) f32
//   Position p of token t's sequence is cache row slot(t, p) = kv_table[t, p / B] * B + p % B, with
//   B = kKvBlockSize (runtime/kv_blocks.h). For token t and query head h, kv head g = h / (n_head /
//   n_head_kv) (llama.cpp's GQA mapping):
//     s_p = q[t,h] · k_cache[slot(t, p), g] / sqrt(hd)          for p = 0 .. positions[t] (causal)
//     out[t,h] = sum_p softmax(s)_p * v_cache[slot(t, p), g]
// A token reads only the blocks of its own table, so sequences sharing a batch never see each other;
// blocks several tables hold (a shared prefix) are read by each. Units: (t, h) pairs, n_tokens * n_head of
// them, in the kv-group-major order of ops/attention_paths.cpp (which balances a prompt over threads).
//
// Numerics. Greedy decoding follows llama.cpp's tokens through near-ties only if every rounding step is
// the same as its, so these are the steps of ggml_compute_forward_flash_attn_ext_f16_one_chunk with an
// F16 KV cache (llama.cpp's default; llama-cli and node-llama-cpp turn flash attention on for the CPU),
// as the AVX-512 build of ggml-cpu compiles it. Per (t, h):
//   1. q is rounded to f16 (to nearest even), as K and V were when kv_write stored them.
//   2. s_p = float(dot(q, k_p)) * (1 / sqrt(hd)), with ggml's f16 dot: the first hd & ~63 elements go into
//      4 x 16 float lanes (accumulator g, lane l takes elements 64c + 16g + l), reduced as
//      (g0 + g2) + (g1 + g3) and then 16 -> 8 -> 4 -> 2 -> 1 lanes; that float is widened to double and
//      the remaining elements are added to it one at a time in double (for hd < 64: the whole dot).
//   3. an online softmax from M = -inf, S = 0 and an f16 accumulator acc[hd] = 0, positions in order
//      (0, 1, 2, ... whichever blocks hold them: the block table changes where a row is read, never the
//      order, so paged, shared and contiguous caches give the same bits):
//        s_p > M:  ms = expf(M - s_p), M = s_p, acc[i] = f16(acc[i] * ms), vs = 1
//        else:     ms = 1, vs = expf(s_p - M)
//        then      acc[i] = f16(fma(v_p[i], vs, acc[i]))   (the compiled ggml_vec_mad_f16 fuses it)
//                  S = S * ms + vs                         (rounded twice)
//   4. out[i] = float(acc[i]) * (1 / S).
// Where llama.cpp rounds differently, on purpose:
//   - for batches of >= 64 query tokens (long prompts) llama.cpp switches to a tiled kernel with an f32
//     accumulator. We run the per-position loop above for every batch size, so a cached decode equals a
//     full recompute bit for bit and a prompt gives the same bits however it is split into batches; the
//     price is that our long prompts differ from llama.cpp's in the last bits.
//   - once llama.cpp's KV view reaches 512 cells (more than 256 positions cached), its single-token
//     decode splits the positions into one chunk per thread and merges the chunks in f32, so its own
//     result depends on its thread count; we keep one sequential loop.
//   - ggml-cpu builds without AVX-512 take 32 elements per step in the dot (64 here), and builds without
//     FMA round the v accumulation twice. We follow the AVX-512 build: llama.cpp's CPU-variant loader
//     picks it on the machines the parity tests run on.
// Values past f16's range (|x| > 65504) become inf when rounded, as in llama.cpp.
// The kernels (scalar and AVX2; ops/cpu.h picks the level, and AVX-512 CPUs run the AVX2 one, whose
// bits are the same) are in ops/attention_paths.cpp; every one equals attention_reference bit for bit.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_checks.h"
#include "ops/op_rows.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

float round_to_f16(float x) {
    return fp16_to_f32(f32_to_fp16(x));
}

// Step 2's dot of two rows of f16 values (held as floats). Products of two halves are exact in float.
float ggml_f16_dot(const float* q, const float* k, int n) {
    const int n64 = n / 64 * 64;
    float lane[64] = {};
    for (int i = 0; i < n64; ++i) lane[i % 64] += q[i] * k[i];
    float r[16];  // accumulator g is lanes 16g .. 16g + 15
    for (int l = 0; l < 16; ++l) r[l] = (lane[l] + lane[32 + l]) + (lane[16 + l] + lane[48 + l]);
    for (int width = 8; width >= 1; width /= 2)
        for (int l = 0; l < width; ++l) r[l] += r[l + width];
    double sum = r[0];
    for (int i = n64; i < n; ++i) sum += double(q[i] * k[i]);
    return float(sum);
}

TensorDesc attention_infer(const NodeInfo& node) {
    check_input_count(node, 5, "q, k_cache, v_cache, positions, kv_table");
    check_dtype(node, 0, "q", DType::F32);
    check_dtype(node, 1, "k_cache", DType::F16);
    check_dtype(node, 2, "v_cache", DType::F16);
    check_dtype(node, 3, "positions", DType::I32);
    check_dtype(node, 4, "kv_table", DType::I32);
    check_rank(node, 0, "q", 2, "(n_tokens, n_head * head_dim)");
    check_rank(node, 1, "k_cache", 2, "(n_slots, n_head_kv * head_dim)");
    check_rank(node, 2, "v_cache", 2, "(n_slots, n_head_kv * head_dim)");
    check_rank(node, 3, "positions", 1, "(n_tokens)");
    check_rank(node, 4, "kv_table", 2, "(n_tokens, table_width)");
    const AttentionParams p = node.params.get<AttentionParams>();
    if (p.n_head <= 0 || p.n_head_kv <= 0 || p.head_dim <= 0)
        throw PlanError(node, "n_head, n_head_kv and head_dim must be > 0, got n_head " +
                                  std::to_string(p.n_head) + ", n_head_kv " + std::to_string(p.n_head_kv) +
                                  ", head_dim " + std::to_string(p.head_dim));
    if (p.head_dim > kAttentionMaxHeadDim)
        throw PlanError(node, "head_dim " + std::to_string(p.head_dim) + " is above the kernel's limit of " +
                                  std::to_string(kAttentionMaxHeadDim));
    if (p.n_head % p.n_head_kv != 0)
        throw PlanError(node, "n_head " + std::to_string(p.n_head) + " is not a multiple of n_head_kv " +
                                  std::to_string(p.n_head_kv));
    const int64_t n_tokens = node.inputs[0].shape[0];
    const int64_t q_width = int64_t(p.n_head) * p.head_dim, kv_width = int64_t(p.n_head_kv) * p.head_dim;
    if (node.inputs[0].shape[1] != q_width)
        throw PlanError(node, "q rows have " + std::to_string(node.inputs[0].shape[1]) +
                                  " elements, expected " + std::to_string(q_width) + " (n_head " +
                                  std::to_string(p.n_head) + " * head_dim " + std::to_string(p.head_dim) +
                                  ")");
    for (int i : {1, 2}) {
        const TensorDesc& cache = node.inputs[size_t(i)];
        if (cache.shape[1] != kv_width)
            throw PlanError(node, std::string(i == 1 ? "k_cache" : "v_cache") + " rows have " +
                                      std::to_string(cache.shape[1]) + " elements, expected " +
                                      std::to_string(kv_width) + " (n_head_kv " +
                                      std::to_string(p.n_head_kv) + " * head_dim " +
                                      std::to_string(p.head_dim) + ")");
        if (cache.shape[0] % kKvBlockSize != 0)
            throw PlanError(node, std::string(i == 1 ? "k_cache" : "v_cache") + " has " +
                                      std::to_string(cache.shape[0]) + " rows, not whole blocks of " +
                                      std::to_string(kKvBlockSize));
    }
    if (node.inputs[2].shape[0] != node.inputs[1].shape[0])
        throw PlanError(node, "v_cache has " + std::to_string(node.inputs[2].shape[0]) + " rows, k_cache " +
                                  std::to_string(node.inputs[1].shape[0]));
    if (node.inputs[3].shape[0] != n_tokens)
        throw PlanError(node, "positions has " + std::to_string(node.inputs[3].shape[0]) +
                                  " entries, q has " + std::to_string(n_tokens) + " tokens");
    if (node.inputs[4].shape[0] != n_tokens)
        throw PlanError(node, "kv_table has " + std::to_string(node.inputs[4].shape[0]) + " rows, q has " +
                                  std::to_string(n_tokens) + " tokens");
    return {DType::F32, node.inputs[0].shape};
}

int64_t attention_work_items(const KernelArgs& args) {
    return args.in[0].rows() * args.params.get<AttentionParams>().n_head;
}

// The numbered steps of the header, as plain loops over floats that hold f16 values.
void attention_reference(const KernelArgs& args) {
    const int64_t n_tokens = args.in[0].rows();
    const AttentionParams p = args.params.get<AttentionParams>();
    const int n_head = p.n_head, hd = p.head_dim, n_head_kv = p.n_head_kv;
    const int64_t row = args.in[1].cols(), table_width = args.in[4].cols();
    const uint16_t* cache_k = args.in[1].as<uint16_t>();
    const uint16_t* cache_v = args.in[2].as<uint16_t>();
    const int32_t* positions = args.in[3].as<int32_t>();
    const int32_t* table = args.in[4].as<int32_t>();
    const float scale = 1.0f / std::sqrt(float(hd));
    std::vector<float> q(static_cast<size_t>(hd)), k(q), v(q), acc(q);  // f16 values, one row each
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int h = 0; h < n_head; ++h) {
            const int64_t g = h / (n_head / n_head_kv);
            for (int i = 0; i < hd; ++i)
                q[i] = round_to_f16(args.in[0].as<float>()[(t * n_head + h) * hd + i]);
            std::fill(acc.begin(), acc.end(), 0.0f);
            float M = -std::numeric_limits<float>::infinity(), S = 0.0f;
            for (int64_t pos = 0; pos <= positions[t]; ++pos) {
                const int64_t slot =
                    int64_t(table[t * table_width + pos / kKvBlockSize]) * kKvBlockSize + pos % kKvBlockSize;
                for (int i = 0; i < hd; ++i) {
                    k[i] = fp16_to_f32(cache_k[slot * row + g * hd + i]);
                    v[i] = fp16_to_f32(cache_v[slot * row + g * hd + i]);
                }
                const float s = ggml_f16_dot(q.data(), k.data(), hd) * scale;
                float ms = 1.0f, vs = 1.0f;
                if (s > M) {
                    ms = std::exp(M - s);
                    M = s;
                    for (float& a : acc) a = round_to_f16(a * ms);
                } else {
                    vs = std::exp(s - M);
                }
                for (int i = 0; i < hd; ++i) acc[i] = round_to_f16(std::fma(v[i], vs, acc[i]));
                volatile float scaled = S * ms;  // volatile: never fused with the add below
                S = scaled + vs;
            }
            const float inv = S == 0.0f ? 0.0f : 1.0f / S;
            for (int i = 0; i < hd; ++i) args.out.as<float>()[(t * n_head + h) * hd + i] = acc[i] * inv;
        }
}

// 4 * hd per (query head, attended position): the q·k dot and the weighted v sum. The attended
// positions are read from `positions` when it has data; at plan time, before the positions exist, a
// fresh prompt (positions 0 .. n_tokens-1) is assumed.
double attention_flops(const KernelArgs& args) {
    const int64_t n_tokens = args.in[0].rows();
    double attended = 0;
    for (int64_t t = 0; t < n_tokens; ++t)
        attended += double((args.in[3].data ? std::max<int64_t>(args.in[3].as<int32_t>()[t], 0) : t) + 1);
    const AttentionParams p = args.params.get<AttentionParams>();
    return 4.0 * double(p.head_dim) * double(p.n_head) * attended;
}

}  // namespace

constexpr AttrDecl kAttentionAttrs[] = {
    int_attr<&AttentionParams::n_head>("n_head", 1, kMaxHeads, "query heads"),
    int_attr<&AttentionParams::n_head_kv>("n_head_kv", 1, kMaxHeads, "key/value heads (divides n_head)"),
    int_attr<&AttentionParams::head_dim>("head_dim", 1, kAttentionMaxHeadDim, "elements per head"),
};

const OpDef kAttentionOp = {
    .name = "attention",
    .n_inputs = 5,
    .state_inputs = 0b00110,  // k_cache, v_cache
    .attrs = kAttentionAttrs,
    .defaults = OpParams::of(AttentionParams{}),
    .infer = attention_infer,
    .work_items = attention_work_items,
    .grain = 1,
    .run = {.scalar = attention_run_scalar, .avx2 = attention_run_avx2},
    .reference = attention_reference,
    .flops = attention_flops,
};

}  // namespace graphrun::ops
