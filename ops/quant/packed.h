// ops/quant/packed.h — weights repacked at load: Q4_0 as q4_0x8, the layout of the lanes GEMMs.
//
// A Q4_0 matrix W (N, K) with N a multiple of 8 takes, packed, the same N * K / 32 * 18 bytes: group g
// (rows 8g .. 8g + 7) fills the bytes rows 8g .. 8g + 7 held, one 144-byte block per 32 columns:
//   bytes   0 ..  15  the 8 rows' fp16 scales d, row order
//   bytes  16 .. 143  4 vectors u[s] of 32 bytes (s = 0..3): bytes 4r .. 4r + 3 of u[s] are row r's
//                     quant bytes 4s .. 4s + 3 (each low nibble weight i, high nibble weight i + 16)
// so the GEMM loads a block's lanes as they are where rows as stored need a transposition per block: the
// AVX2 one 8 rows to a register (ops/quant/avx2/lanes_gemm.cpp: Q4x8Lanes), the AVX-512 one two groups
// side by side, 16 rows (ops/quant/avx512/lanes_gemm.cpp: Q4x8PairView). The values and the arithmetic are those of the rows as
// stored: the packed GEMM gives the scalar vec_dot's bits.
#pragma once

#include <cstdint>

namespace graphrun::ops {

constexpr int kQ4_0x8Rows = 8;             // rows per packed group
constexpr int kQ4_0x8BlockBytes = 8 * 18;  // one 32-column block of a group: 8 block_q4_0
constexpr int kQ4_0x8QuantOffset = 8 * 2;  // the quant bytes after the 8 scales

// rows (n_rows, k) Q4_0 as stored -> packed (same bytes); n_rows % 8 == 0, k % 32 == 0. No overlap.
void pack_q4_0x8(const void* rows, void* packed, int64_t n_rows, int64_t k);
// The inverse: packed -> rows as stored (for references and tests).
void unpack_q4_0x8(const void* packed, void* rows, int64_t n_rows, int64_t k);

}  // namespace graphrun::ops
