// ops/quant/blocks.h — ggml's block structs for the types graphrun runs, byte for byte.
//
// All scales are IEEE fp16 bits (runtime/fp16.h) unless said otherwise. "Weight j" counts within the
// block (32 weights) or super-block (256 weights, the K and IQ4_XS types). docs/quantization.md
// draws the same layouts as tables.
#pragma once

#include <cstdint>

namespace graphrun::ops {

constexpr int kQK = 32;     // weights per block of the 32-blocks (Q4_0 .. Q8_1)
constexpr int kQK_K = 256;  // weights per super-block of the K types and IQ4_XS

// ---- 32-weight blocks ----

// w_j = d * qs[j]
struct block_q8_0 {
    uint16_t d;
    int8_t qs[kQK];
};
static_assert(sizeof(block_q8_0) == 34, "Q8_0 block must match ggml's layout");

// Activations for Q4_1 / Q5_1: Q8_0 plus s = fp16(d * sum_j qs[j]), the block sum a min needs.
struct block_q8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[kQK];
};
static_assert(sizeof(block_q8_1) == 36, "Q8_1 block must match ggml's layout");

// w_j = d * (nibble_j - 8); byte i holds weight i in its low nibble and weight 16 + i in its high one.
struct block_q4_0 {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_q4_0) == 18, "Q4_0 block must match ggml's layout");

// w_j = d * nibble_j + m (nibbles as in Q4_0).
struct block_q4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_q4_1) == 20, "Q4_1 block must match ggml's layout");

// w_j = d * (q_j - 16), q_j = nibble_j | bit j of qh (little-endian u32) << 4.
struct block_q5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_q5_0) == 22, "Q5_0 block must match ggml's layout");

// w_j = d * q_j + m (q_j as in Q5_0).
struct block_q5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_q5_1) == 24, "Q5_1 block must match ggml's layout");

// ---- 256-weight super-blocks ----

// Activations for the K types and IQ4_XS: a float scale (not fp16), w_j = d * qs[j], and
// bsums[g] = sum of qs[16g .. 16g+15], which the types with mins or offsets fold in without
// touching the quants again.
struct block_q8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292, "Q8_K block must match ggml's layout");

// 8 sub-blocks of 32: w = d * sc_s * q - dmin * m_s, q a nibble, sc_s and m_s 6-bit.
//   scales[12]: for s < 4, sc_s = scales[s] & 63 and m_s = scales[s + 4] & 63; for s >= 4,
//   sc_s = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4, m_s = (scales[s + 4] >> 4) | (scales[s] >> 6)
//   << 4. qs[128]: 4 chunks of 32 bytes; chunk c holds weight 64c + l in the low nibble of byte l and weight
//   64c + 32 + l in its high nibble (sub-blocks 2c and 2c + 1).
struct block_q4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144, "Q4_K block must match ggml's layout");

// As Q4_K with a fifth bit: q = nibble | (bit b of qh[l]) << 4, where weight 64c + l uses bit 2c and
// weight 64c + 32 + l bit 2c + 1.
struct block_q5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176, "Q5_K block must match ggml's layout");

// 16 sub-blocks of 16: w = d * scales[s] * (q - 32), q 6-bit, scales int8.
//   Per half h (128 weights): ql[64h + l] holds weight 128h + l (low nibble) and 128h + 64 + l (high),
//   ql[64h + 32 + l] weights 128h + 32 + l and 128h + 96 + l; qh[32h + l] holds the top two bits of
//   weights 128h + l, +32, +64, +96 in bits 0-1, 2-3, 4-5, 6-7.
struct block_q6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
static_assert(sizeof(block_q6_K) == 210, "Q6_K block must match ggml's layout");

// Non-linear 4-bit: w = d * (ls_s - 32) * kIq4nlValues[nibble], 8 sub-blocks of 32 with 6-bit ls_s:
//   ls_s = (scales_l[s / 2] >> 4 (s % 2)) & 15 | ((scales_h >> 2s) & 3) << 4.
//   qs[16s + j] holds weight 32s + j (low nibble) and 32s + 16 + j (high).
struct block_iq4_xs {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[kQK_K / 64];
    uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_iq4_xs) == 136, "IQ4_XS block must match ggml's layout");

// Non-linear 4-bit in blocks of 32: w = d * kIq4nlValues[nibble], nibbles as in Q4_0. The row type
// the iq4_xs mix falls back to when rows are not whole super-blocks.
struct block_iq4_nl {
    uint16_t d;
    uint8_t qs[kQK / 2];
};
static_assert(sizeof(block_iq4_nl) == 18, "IQ4_NL block must match ggml's layout");

// The 16 levels of IQ4_NL / IQ4_XS: denser near zero, where most weights are.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace graphrun::ops
