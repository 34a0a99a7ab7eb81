// harness/attention_shapes.cpp — attention's and kv_write's shapes for the op-table walk: a paged cache
// whose blocks are out of order, grouped-query heads, head sizes around the dot's 64-element lanes, and
// score gaps past expf's float range.
//   attention: q (T, n_head * hd) f32, k_cache, v_cache (n_slots, n_head_kv * hd) f16, positions (T) i32,
//              kv_table (T, table_width) i32 -> out (T, n_head * hd) f32
//   kv_write:  cache (n_slots, width) f16, x (T, width) f32, slots (T) i32 -> cache, rows at slots written
#include "harness/op_coverage.h"
#include "ops/attention.h"
#include "runtime/checked_math.h"
#include "runtime/kv_blocks.h"

namespace graphrun::testing {
namespace {

constexpr uint16_t kF16Nan = 0x7e00;
constexpr int64_t B = kKvBlockSize;

// One sequence's tokens at positions first_pos .. first_pos + T - 1, over a cache holding positions
// 0 .. first_pos + T - 1 (as kv_write would have stored them) in blocks laid out last first; every other
// row is NaN, and so is the block the table's spare entry points at, so a read outside the token's own
// positions poisons its output.
OpShape attention_shape(int64_t n_tokens, int n_head, int n_head_kv, int hd, int32_t first_pos, float q_scale,
                        uint32_t seed) {
    std::string label = "T" + std::to_string(n_tokens) + ".heads" + std::to_string(n_head) + "_" +
                        std::to_string(n_head_kv) + "x" + std::to_string(hd) + ".pos" + std::to_string(first_pos);
    if (q_scale != 1.0f) label += ".qx" + std::to_string(int(q_scale));
    return {label, [=] {
                const int64_t qw = int64_t(n_head) * hd, kvw = int64_t(n_head_kv) * hd;
                const int64_t n_pos = first_pos + n_tokens, used = ceil_div(n_pos, B), n_blocks = used + 1;
                std::vector<int32_t> table;  // block of positions [b B, (b + 1) B), then the NaN block
                for (int64_t b = 0; b < used; ++b) table.push_back(int32_t(used - 1 - b));
                table.push_back(int32_t(n_blocks - 1));
                std::vector<uint16_t> k_cache(size_t(n_blocks * B * kvw), kF16Nan), v_cache(k_cache);
                const std::vector<float> k = random_floats(size_t(n_pos * kvw), seed + 1),
                                         v = random_floats(size_t(n_pos * kvw), seed + 2);
                for (int64_t p = 0; p < n_pos; ++p)
                    for (int64_t i = 0; i < kvw; ++i) {
                        const int64_t row = table[size_t(p / B)] * B + p % B;
                        k_cache[size_t(row * kvw + i)] = f32_to_fp16(k[size_t(p * kvw + i)]);
                        v_cache[size_t(row * kvw + i)] = f32_to_fp16(v[size_t(p * kvw + i)]);
                    }
                std::vector<float> q = random_floats(size_t(n_tokens * qw), seed);
                for (float& x : q) x *= q_scale;
                std::vector<int32_t> pos, tables;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    pos.push_back(first_pos + int32_t(t));
                    tables.insert(tables.end(), table.begin(), table.end());
                }
                OpCall c;
                c.in = {f32_tensor({n_tokens, qw}, q),
                        raw_tensor(DType::F16, {n_blocks * B, kvw}, k_cache.data(), k_cache.size() * 2),
                        raw_tensor(DType::F16, {n_blocks * B, kvw}, v_cache.data(), v_cache.size() * 2),
                        i32_tensor({n_tokens}, pos), i32_tensor({n_tokens, int64_t(table.size())}, tables)};
                c.out = output_tensor(DType::F32, {n_tokens, qw});
                c.params = OpParams::of(ops::AttentionParams{.n_head = n_head, .n_head_kv = n_head_kv, .head_dim = hd});
                return op_case(std::move(c));
            }};
}

// T tokens' rows stored at scattered slots of an n_slots-row cache that holds other values.
OpShape kv_write_shape(int64_t n_tokens, int64_t n_slots, int64_t width, uint32_t seed) {
    const std::string label = "T" + std::to_string(n_tokens) + ".slots" + std::to_string(n_slots) + "x" +
                              std::to_string(width);
    return {label, [=] {
                std::vector<int32_t> slots;
                for (int64_t t = 0; t < n_tokens; ++t) slots.push_back(int32_t((t * 7 + 3) % n_slots));
                OpCall c;
                c.in = {f16_tensor({n_slots, width}, random_floats(size_t(n_slots * width), seed)),
                        f32_tensor({n_tokens, width}, random_floats(size_t(n_tokens * width), seed + 1, -70000, 70000)),
                        i32_tensor({n_tokens}, slots)};
                c.out = output_tensor(DType::F16, {n_slots, width});
                return op_case(std::move(c));
            }};
}

// A converting copy: the T rows read and written (the rest of the cache is not touched).
double kv_write_bytes(const OpCase& c) {
    return double(c.call.in[1].bytes.size()) * 1.5 + double(c.call.in[2].bytes.size());
}

const bool attention_registered = register_op_coverage({
    .row = "attention",
    .max_nmse = 0,  // every path takes the reference's rounding steps (ops/attention.cpp): the same bits
    .test_shapes =
        [] {
            struct Heads {
                int n_head, n_head_kv;
            };
            std::vector<OpShape> s;
            // hd: below 64 (the dot all in double), 64 (all in float lanes), lanes plus a tail of 6 or 8.
            for (int64_t t : {1, 3, 7})
                for (int hd : {8, 64, 70, 136})
                    for (Heads h : {Heads{4, 4}, Heads{8, 2}})
                        for (int32_t first : {0, 13})
                            s.push_back(attention_shape(t, h.n_head, h.n_head_kv, hd, first, t == 3 ? 400.0f : 1.0f,
                                                        uint32_t(t * 31 + hd + first)));
            return s;
        },
    .bench_shapes =
        [] {
            // Decode at 256 and 1024 cached positions, 32 query heads of 128: Llama-2-7B (32 kv heads)
            // and grouped-query 4 (8 kv heads, Llama-3-8B-like); and a 32-token prompt batch.
            std::vector<OpShape> s;
            for (int n_head_kv : {32, 8})
                for (int32_t n_pos : {256, 1024}) s.push_back(attention_shape(1, 32, n_head_kv, 128, n_pos - 1, 1, 4));
            s.push_back(attention_shape(32, 32, 8, 128, 0, 1, 5));
            return s;
        },
});

const bool kv_write_registered = register_op_coverage({
    .row = "kv_write",
    .max_nmse = 0,  // f16 of each value, round to nearest even (past 65504: inf), as the reference
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (int64_t t : {1, 3, 7})
                for (int64_t width : {1, 8, 70, 136}) s.push_back(kv_write_shape(t, 19, width, uint32_t(t * 10 + width)));
            return s;
        },
    .bench_shapes =
        [] {  // one layer's K of Llama-2-7B (32 kv heads of 128) and of GQA 8 kv heads
            return std::vector<OpShape>{kv_write_shape(1, 1024, 4096, 1), kv_write_shape(32, 1024, 4096, 2),
                                        kv_write_shape(32, 1024, 1024, 3)};
        },
    .bytes_moved = kv_write_bytes,
});

}  // namespace
}  // namespace graphrun::testing
