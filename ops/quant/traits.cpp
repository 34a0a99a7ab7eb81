// ops/quant/traits.cpp — the QuantTraits table: one row per type, its kernels picked per SIMD level.
//
// A new quantized type is one row in `rows_for` (and its kernels in their own files): the matmul,
// its op-table row and name, the planner's kernel choice and the embedding lookup all read it here.
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/quant/kernels.h"
#include "ops/quant/packed.h"

namespace graphrun::ops {

namespace {

// void-typed adapters around the typed kernels.
template <typename Block, void (*Fn)(const float*, Block*, int64_t)>
void quantize_as(const float* x, void* y, int64_t n) {
    Fn(x, static_cast<Block*>(y), n);
}
template <typename Block, void (*Fn)(const Block*, float*, int64_t)>
void dequantize_as(const void* x, float* y, int64_t n) {
    Fn(static_cast<const Block*>(x), y, n);
}

void copy_f32(const float* x, void* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}
void copy_f32_out(const void* x, float* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}
void f32_to_f16_scalar(const float* x, void* y, int64_t n) {
    scalar::f32_to_f16_row(x, static_cast<uint16_t*>(y), n);
}
void f16_to_f32_scalar(const void* x, float* y, int64_t n) {
    scalar::f16_to_f32_row(static_cast<const uint16_t*>(x), y, n);
}
void f32_to_f16_avx2(const float* x, void* y, int64_t n) {
    avx2::f32_to_f16_row(x, static_cast<uint16_t*>(y), n);
}
void f16_to_f32_avx2(const void* x, float* y, int64_t n) {
    avx2::f16_to_f32_row(static_cast<const uint16_t*>(x), y, n);
}

struct TypeRow {
    DType type, vec_dot_type;
    PerLevel<QuantizeRowFn> quantize;
    PerLevel<DequantizeRowFn> dequantize;
    PerLevel<VecDotFn> vec_dot{};
    const char* matmul_kernel = nullptr;
    PerLevel<VecDot4Fn> vec_dot4{};
    PerLevel<GemmFn> gemm{};  // a level without one of its own runs the AVX2 GEMM
    bool gemm_group_sums = false;
    GroupSumsFn group_sums = nullptr;
    int min_offset = -1;
    std::optional<DType> short_row_fallback{};  // none: the type itself
    // Repacked at load (ops/quant/packed.h): the GEMM on the packed layout, bound at a level only where
    // it replaces that level's own `gemm` (the same level of the PerLevel).
    PerLevel<GemmFn> packed_gemm{};
    PackFn pack = nullptr, unpack = nullptr;
    const char* packed_layout = nullptr;
    const char* packed_variant = nullptr;  // the matmul's path in a plan dump
    int packed_rows = 0;
};

// Weights are quantized with ggml's reference rounding at every level (a file must not depend on the
// CPU that wrote it); the only SIMD quantizer, Q8_0's, gives the reference's bits.
const TypeRow kRows[] = {
    {.type = DType::F32, .vec_dot_type = DType::F32, .quantize = {copy_f32}, .dequantize = {copy_f32_out}},
    {.type = DType::F16,
     .vec_dot_type = DType::F32,
     .quantize = {f32_to_f16_scalar, f32_to_f16_avx2},
     .dequantize = {f16_to_f32_scalar, f16_to_f32_avx2}},
    {.type = DType::Q8_0,
     .vec_dot_type = DType::Q8_0,
     .quantize = {quantize_as<block_q8_0, quantize_row_q8_0_ref>,
                  quantize_as<block_q8_0, avx2::quantize_row_q8_0>},
     .dequantize = {dequantize_as<block_q8_0, dequantize_row_q8_0>},
     .vec_dot = {scalar::vec_dot_q8_0_q8_0, avx2::vec_dot_q8_0_q8_0},
     .matmul_kernel = "matmul_q8_0",
     .gemm = {.avx2 = avx2::gemm_lanes_q8_0_q8_0, .avx512 = avx512::gemm_lanes_q8_0_q8_0},
     .gemm_group_sums = true,  // the AVX-512 GEMM's zero point (its weights made unsigned)
     .group_sums = group_sums_q8_0},
    {.type = DType::Q4_0,
     .vec_dot_type = DType::Q8_0,
     .quantize = {quantize_as<block_q4_0, quantize_row_q4_0_ref>},
     .dequantize = {dequantize_as<block_q4_0, dequantize_row_q4_0>},
     .vec_dot = {scalar::vec_dot_q4_0_q8_0, avx2::vec_dot_q4_0_q8_0},
     .matmul_kernel = "matmul_q4_0",
     .gemm = {.avx2 = avx2::gemm_lanes_q4_0_q8_0, .avx512 = avx512::gemm_lanes_q4_0_q8_0},
     .gemm_group_sums = true,
     .packed_gemm = {.avx2 = avx2::gemm_lanes_q4_0x8_q8_0, .avx512 = avx512::gemm_lanes_q4_0x8_q8_0},
     .pack = pack_q4_0x8,
     .unpack = unpack_q4_0x8,
     .packed_layout = "q4_0x8",
     .packed_variant = "gemm_q4_0x8",
     .packed_rows = kQ4_0x8Rows},
    {.type = DType::Q4_1,
     .vec_dot_type = DType::Q8_1,
     .quantize = {quantize_as<block_q4_1, quantize_row_q4_1_ref>},
     .dequantize = {dequantize_as<block_q4_1, dequantize_row_q4_1>},
     .vec_dot = {scalar::vec_dot_q4_1_q8_1, avx2::vec_dot_q4_1_q8_1},
     .matmul_kernel = "matmul_q4_1",
     .min_offset = 2},  // { fp16 d; fp16 m; ... }
    {.type = DType::Q5_0,
     .vec_dot_type = DType::Q8_0,
     .quantize = {quantize_as<block_q5_0, quantize_row_q5_0_ref>},
     .dequantize = {dequantize_as<block_q5_0, dequantize_row_q5_0>},
     .vec_dot = {scalar::vec_dot_q5_0_q8_0, avx2::vec_dot_q5_0_q8_0},
     .matmul_kernel = "matmul_q5_0"},
    {.type = DType::Q5_1,
     .vec_dot_type = DType::Q8_1,
     .quantize = {quantize_as<block_q5_1, quantize_row_q5_1_ref>},
     .dequantize = {dequantize_as<block_q5_1, dequantize_row_q5_1>},
     .vec_dot = {scalar::vec_dot_q5_1_q8_1, avx2::vec_dot_q5_1_q8_1},
     .matmul_kernel = "matmul_q5_1",
     .min_offset = 2},     // { fp16 d; fp16 m; ... }
    {.type = DType::Q8_1,  // activations of Q4_1 / Q5_1
     .vec_dot_type = DType::Q8_1,
     .quantize = {quantize_as<block_q8_1, quantize_row_q8_1_ref>},
     .dequantize = {dequantize_as<block_q8_1, dequantize_row_q8_1>}},
    {.type = DType::Q4_K,
     .vec_dot_type = DType::Q8_K,
     .quantize = {quantize_as<block_q4_K, quantize_row_q4_k_ref>},
     .dequantize = {dequantize_as<block_q4_K, dequantize_row_q4_k>},
     .vec_dot = {scalar::vec_dot_q4_k_q8_k, avx2::vec_dot_q4_k_q8_k},
     .matmul_kernel = "matmul_q4_k",
     .gemm = {.avx2 = avx2::gemm_lanes_q4_k_q8_k},
     .gemm_group_sums = true,
     .short_row_fallback = DType::Q5_0},
    {.type = DType::Q5_K,
     .vec_dot_type = DType::Q8_K,
     .quantize = {quantize_as<block_q5_K, quantize_row_q5_k_ref>},
     .dequantize = {dequantize_as<block_q5_K, dequantize_row_q5_k>},
     .vec_dot = {scalar::vec_dot_q5_k_q8_k, avx2::vec_dot_q5_k_q8_k},
     .matmul_kernel = "matmul_q5_k",
     .short_row_fallback = DType::Q5_1},
    {.type = DType::Q6_K,
     .vec_dot_type = DType::Q8_K,
     .quantize = {quantize_as<block_q6_K, quantize_row_q6_k_ref>},
     .dequantize = {dequantize_as<block_q6_K, dequantize_row_q6_k>},
     .vec_dot = {scalar::vec_dot_q6_k_q8_k, avx2::vec_dot_q6_k_q8_k},
     .matmul_kernel = "matmul_q6_k",
     .gemm = {.avx2 = avx2::gemm_lanes_q6_k_q8_k},
     .short_row_fallback = DType::Q8_0},
    {.type = DType::Q8_K,  // activations of the super-block types
     .vec_dot_type = DType::Q8_K,
     .quantize = {quantize_as<block_q8_K, quantize_row_q8_k_ref>},
     .dequantize = {dequantize_as<block_q8_K, dequantize_row_q8_k>},
     .group_sums = group_sums_q8_k},
    {.type = DType::IQ4_NL,
     .vec_dot_type = DType::Q8_0,
     .quantize = {quantize_as<block_iq4_nl, quantize_row_iq4_nl_ref>},
     .dequantize = {dequantize_as<block_iq4_nl, dequantize_row_iq4_nl>},
     .vec_dot = {scalar::vec_dot_iq4_nl_q8_0, avx2::vec_dot_iq4_nl_q8_0},
     .matmul_kernel = "matmul_iq4_nl"},
    {.type = DType::IQ4_XS,
     .vec_dot_type = DType::Q8_K,
     .quantize = {quantize_as<block_iq4_xs, quantize_row_iq4_xs_ref>},
     .dequantize = {dequantize_as<block_iq4_xs, dequantize_row_iq4_xs>},
     .vec_dot = {scalar::vec_dot_iq4_xs_q8_k, avx2::vec_dot_iq4_xs_q8_k},
     .matmul_kernel = "matmul_iq4_xs",
     .short_row_fallback = DType::IQ4_NL},
};

// Indexed by the DType's value (its ggml id): the traits of one level, nullptr where a type has none.
struct Table {
    std::array<QuantTraits, std::size(kRows)> rows{};
    std::array<const QuantTraits*, 256> by_type{};

    explicit Table(SimdLevel level) {
        for (size_t i = 0; i < std::size(kRows); ++i) {
            const TypeRow& r = kRows[i];
            rows[i] = {r.type,
                       r.vec_dot_type,
                       r.quantize.at(level),
                       r.dequantize.at(level),
                       r.vec_dot.at(level),
                       r.matmul_kernel,
                       r.vec_dot4.at(level),
                       r.gemm.at(level),
                       r.gemm_group_sums,
                       r.group_sums,
                       r.min_offset,
                       r.short_row_fallback.value_or(r.type),
                       r.pack,
                       r.unpack,
                       r.packed_layout,
                       r.packed_variant,
                       r.packed_rows,
                       nullptr};
            QuantTraits& t = rows[i];
            if (r.packed_gemm && r.gemm && level != SimdLevel::Scalar &&
                r.packed_gemm.level_of(level) == r.gemm.level_of(level))
                t.packed_gemm = r.packed_gemm.at(level);
            by_type[size_t(r.type)] = &rows[i];
        }
    }
};

}  // namespace

const QuantTraits* quant_traits_at(DType type, SimdLevel level) {
    static const Table scalar(SimdLevel::Scalar), avx2(SimdLevel::Avx2), avx512(SimdLevel::Avx512);
    const Table& t = level == SimdLevel::Avx512 ? avx512 : level == SimdLevel::Avx2 ? avx2 : scalar;
    return t.by_type[size_t(type)];
}

const QuantTraits* quant_traits(DType type) {
    return quant_traits_at(type, active_simd_level());
}

std::span<const DType> runnable_weight_types() {
    static const std::vector<DType> types = [] {
        std::vector<DType> out = {DType::F32, DType::F16};
        for (const DTypeTraits& t : dtype_table())
            if (const QuantTraits* tr = quant_traits_at(t.type, SimdLevel::Scalar);
                tr && tr->vec_dot && tr->matmul_kernel)
                out.push_back(t.type);
        return out;
    }();
    return types;
}

std::span<const DType> runnable_quantized_weight_types() {
    return runnable_weight_types().subspan(2);
}

std::string runnable_weight_type_names() {
    std::string names;
    for (DType type : runnable_weight_types())
        names += (names.empty() ? "" : ", ") + std::string(dtype_name(type));
    return names;
}

void dequantize_row(DType type, const void* row, float* y, int64_t n) {
    const QuantTraits* t = quant_traits(type);
    // Types without kernels (I32 ids, i-quants graphrun cannot decode) have no row; plans check first.
    if (!t || !t->dequantize_row)
        throw std::invalid_argument(std::string("dequantize_row: no float conversion for ") +
                                    dtype_name(type));
    t->dequantize_row(row, y, n);
}

}  // namespace graphrun::ops
