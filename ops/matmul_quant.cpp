// ops/matmul_quant.cpp — matmul on quantized weights, one implementation for every type, driven by
// the weight type's QuantTraits row (ops/quant/traits.h).
//
//   x (n_tokens, K) f32 · W (N, K)ᵀ quantized -> y (n_tokens, N) f32
//   scratch: xq (n_tokens, K) in the traits' vec_dot_type (Q8_0, Q8_1 or Q8_K), the activations
//   quantized once per call; then, for a gemm that reads them (traits' gemm_group_sums), the sums of
//   each 32 values of xq, (n_tokens, K / 32) int16, at offset group_sums_offset.
//
// prepare (work units: tokens) quantizes x into xq; run (work units: weight rows n, i.e. output
// columns) computes y[t, n] = vec_dot(W[n], xq[t]). Decode is bound by reading W, so every weight
// row is streamed from memory once per call: rows go in tiles small enough to stay in L2 while
// all tokens pass over them. A traits row with a gemm (Q8_0, Q4_0, Q4_K; Q8_0 and Q4_0 at AVX-512 too) runs
// every call through it: tiles of rows × tokens, so each weight block is unpacked once for several tokens.
//
// Invariant (other work builds on it): y[t, n] is the same bits whatever n_tokens is and however the
// rows are split into ranges. Each output is one vec_dot call, or for types with a four-row kernel,
// one vec_dot4 call on the aligned group of four rows holding n; which of the two depends on n and N
// only, never on the range. A gemm computes each output in vec_dot's order wherever its tiles fall.
#include "ops/matmul_quant.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "ops/op_checks.h"
#include "ops/op_rows.h"
#include "ops/quant/kernels.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

constexpr int64_t kRowTile = 16;  // 16 rows of K = 4096 in Q8_0 are 70 KiB: well inside L2

// Where the group sums start in the scratch: after xq, 64-byte aligned.
int64_t group_sums_offset(int64_t n_tokens, int64_t xq_row) {
    return (n_tokens * xq_row + 63) / 64 * 64;
}

// One token's outputs for weight rows [n0, n1) of the N rows.
void run_token(const QuantTraits& tr, int64_t k, int64_t n_out, const uint8_t* w, int64_t w_row,
               const uint8_t* x_t, float* y_t, int64_t n0, int64_t n1) {
    int64_t n = n0;
    if (tr.vec_dot4) {
        // Rows of whole aligned groups [4g, 4g + 4) inside N go through vec_dot4 whatever range they
        // are in; a range cutting a group computes the whole group and keeps its own rows.
        while (n < n1 && (n & ~int64_t(3)) + 4 <= n_out) {
            const int64_t g = n & ~int64_t(3);
            if (g == n && n + 4 <= n1) {
                tr.vec_dot4(k, w + n * w_row, w_row, x_t, y_t + n);
                n += 4;
                continue;
            }
            float four[4];
            tr.vec_dot4(k, w + g * w_row, w_row, x_t, four);
            const int64_t stop = std::min(g + 4, n1);
            for (; n < stop; ++n) y_t[n] = four[n - g];
        }
    }
    for (; n < n1; ++n) y_t[n] = tr.vec_dot(k, w + n * w_row, x_t);
}

void run_rows(const KernelArgs& a, int64_t begin, int64_t end, const QuantTraits& tr) {
    const TensorRef& w = a.in[1];
    const int64_t k = w.dim(1), n_out = w.dim(0), n_tokens = a.in[0].rows();
    const int64_t w_row = row_bytes(w.dtype, k), xq_row = row_bytes(tr.vec_dot_type, k);
    const auto* wq = static_cast<const uint8_t*>(w.data);
    const auto* xq = static_cast<const uint8_t*>(a.scratch);
    float* y = a.out.as<float>();
    // A weight repacked at load (w.packed) has its own GEMM; the planner packs only where the plan's
    // level has one, and the executor's ranges (multiples of the grain) start on its groups.
    if (const GemmFn gemm = w.packed ? tr.packed_gemm : tr.gemm) {
        gemm({.k = k,
              .n_tokens = n_tokens,
              .w = wq,
              .w_row_bytes = w_row,
              .xq = xq,
              .xq_row_bytes = xq_row,
              .y = y,
              .y_stride = n_out,
              .x_group_sums = tr.gemm_group_sums
                                  ? reinterpret_cast<const int16_t*>(xq + group_sums_offset(n_tokens, xq_row))
                                  : nullptr},
             begin, end);
        return;
    }
    for (int64_t n0 = begin; n0 < end; n0 += kRowTile) {
        const int64_t n1 = std::min(end, n0 + kRowTile);
        for (int64_t t = 0; t < n_tokens; ++t)
            run_token(tr, k, n_out, wq, w_row, xq + t * xq_row, y + t * n_out, n0, n1);
    }
}

}  // namespace

TensorDesc matmul_quant_infer(const NodeInfo& node) {
    check_input_count(node, 2, "x, weight");
    const TensorDesc& x = node.inputs[0];
    const TensorDesc& w = node.inputs[1];
    if (x.dtype != DType::F32) throw PlanError(node, "input x is " + x.str() + ", expected f32");
    if (x.shape.empty()) throw PlanError(node, "input x is a scalar, expected rows (n_tokens, K)");
    const QuantTraits* tr = quant_traits(w.dtype);
    if (!tr || !tr->vec_dot)
        throw PlanError(node, "weight is " + w.str() + ": graphrun has no quantized matmul kernel for " +
                                  dtype_name(w.dtype));
    if (w.shape.size() != 2) throw PlanError(node, "weight is " + w.str() + ", expected a matrix (N, K)");
    const int64_t k = w.shape[1];
    if (x.shape.back() != k)
        throw PlanError(node, "input x " + x.str() + " has rows of " + std::to_string(x.shape.back()) +
                                  " elements, weight " + w.str() + " has rows of " + std::to_string(k));
    const int64_t block = dtype_traits(w.dtype).block_size;
    if (k % block != 0)
        throw PlanError(node, "weight " + w.str() + " has rows of " + std::to_string(k) +
                                  " elements, not a multiple of the " + dtype_name(w.dtype) + " block size " +
                                  std::to_string(block));
    TensorDesc y{DType::F32, x.shape};
    y.shape.back() = w.shape[0];
    return y;
}

int64_t matmul_quant_scratch_bytes(const NodeInfo& node) {
    const TensorDesc& x = node.inputs[0];
    const int64_t k = x.shape.back();
    return matmul_quant_scratch_bytes_for(node.inputs[1].dtype, x.n_elements() / k, k);
}

int64_t matmul_quant_scratch_bytes_for(DType weight, int64_t n_tokens, int64_t k) {
    const QuantTraits& tr = *quant_traits(weight);
    const int64_t xq_row = row_bytes(tr.vec_dot_type, k);
    if (!tr.gemm_group_sums) return n_tokens * xq_row;
    return group_sums_offset(n_tokens, xq_row) + n_tokens * (k / 32) * int64_t(sizeof(int16_t));
}

int64_t matmul_quant_work_items(const KernelArgs& a) {
    return a.in[1].dim(0);
}
int64_t matmul_quant_prepare_items(const KernelArgs& a) {
    return a.in[0].rows();
}

namespace {

// The kernels of one level, bound per plan through the rows' PerLevel (ops/cpu.h): the traits of the
// weight's type at level L.
// xq[t] = x[t] in the activation type, for tokens [begin, end).
template <SimdLevel L>
void prepare_at(const KernelArgs& a, int64_t begin, int64_t end) {
    const QuantTraits& wt = *quant_traits_at(a.in[1].dtype, L);
    matmul_quant_prepare_with(a, begin, end, wt, *quant_traits_at(wt.vec_dot_type, L));
}

template <SimdLevel L>
void run_at(const KernelArgs& a, int64_t begin, int64_t end) {
    run_rows(a, begin, end, *quant_traits_at(a.in[1].dtype, L));
}

}  // namespace

void matmul_quant_prepare_with(const KernelArgs& a, int64_t begin, int64_t end, const QuantTraits& wt,
                               const QuantTraits& xt) {
    const int64_t k = a.in[0].cols(), xq_row = row_bytes(wt.vec_dot_type, k);
    const auto* x = a.in[0].as<const float>();
    auto* xq = static_cast<uint8_t*>(a.scratch);
    for (int64_t t = begin; t < end; ++t) xt.quantize_row(x + t * k, xq + t * xq_row, k);
    if (!wt.gemm_group_sums)
        return;  // at every level, so a level that binds the scalar prepare still has them
    auto* sums = reinterpret_cast<int16_t*>(xq + group_sums_offset(a.in[0].rows(), xq_row));
    for (int64_t t = begin; t < end; ++t) xt.group_sums(xq + t * xq_row, sums + t * (k / 32), k);
}

void matmul_quant_run_with(const KernelArgs& a, int64_t begin, int64_t end, const QuantTraits& traits) {
    run_rows(a, begin, end, traits);
}

namespace {

// Weights with a min (traits' min_offset: Q4_1 / Q5_1) are d q + m per block, and their kernels take
// the min term from the Q8_1 activation's block sum s as stored (rounded to fp16), as ggml does:
//   y = sum_b [ sum_{i in b} (w_i - m_b) x_i + m_b s_b ].
// m_b is the fp16 at byte min_offset of the weight block.
void reference_with_block_sums(const KernelArgs& a, const std::vector<float>& wf,
                               const std::vector<float>& xf, int min_offset) {
    const TensorRef& w = a.in[1];
    const int64_t k = w.dim(1), n_out = w.dim(0), n_tokens = a.in[0].rows(), nb = k / kQK;
    const int64_t block_bytes = dtype_traits(w.dtype).block_bytes;
    std::vector<block_q8_1> xq(static_cast<size_t>(nb));
    for (int64_t t = 0; t < n_tokens; ++t) {
        quantize_row_q8_1_ref(a.in[0].as<const float>() + t * k, xq.data(), k);
        for (int64_t n = 0; n < n_out; ++n) {
            const auto* row = static_cast<const uint8_t*>(w.data) + n * row_bytes(w.dtype, k);
            double sum = 0.0;
            for (int64_t b = 0; b < nb; ++b) {
                uint16_t m_bits;
                std::memcpy(&m_bits, row + b * block_bytes + min_offset, sizeof m_bits);
                const double m = fp16_to_f32(m_bits);
                for (int64_t i = b * kQK; i < (b + 1) * kQK; ++i)
                    sum += (double(wf[size_t(n * k + i)]) - m) * double(xf[size_t(t * k + i)]);
                sum += m * double(fp16_to_f32(xq[size_t(b)].s));
            }
            a.out.as<float>()[t * n_out + n] = float(sum);
        }
    }
}

}  // namespace

// The whole op as plain loops, sharing no kernel code: weights dequantized to float, x quantized by
// the activation type's reference quantizer and dequantized, products summed in double. This is the
// value the integer kernels compute up to float rounding of the block scales and sums.
void matmul_quant_reference(const KernelArgs& a) {
    if (a.in[1].packed) {  // the same op on the rows as stored
        const QuantTraits& pt = *quant_traits_at(a.in[1].dtype, SimdLevel::Scalar);
        const int64_t n_out = a.in[1].dim(0), k = a.in[1].dim(1);
        std::vector<uint8_t> rows(size_t(n_out * row_bytes(a.in[1].dtype, k)));
        pt.unpack(a.in[1].data, rows.data(), n_out, k);
        KernelArgs stored = a;
        stored.in[1].data = rows.data();
        stored.in[1].packed = false;
        return matmul_quant_reference(stored);
    }
    const TensorRef& w = a.in[1];
    const int64_t k = w.dim(1), n_out = w.dim(0), n_tokens = a.in[0].rows();
    const QuantTraits& wt = *quant_traits_at(w.dtype, SimdLevel::Scalar);
    const QuantTraits& xt = *quant_traits_at(wt.vec_dot_type, SimdLevel::Scalar);
    const int64_t w_row = row_bytes(w.dtype, k);
    const auto* x = a.in[0].as<const float>();
    std::vector<float> wf(size_t(n_out * k)), xf(size_t(n_tokens * k));
    std::vector<uint8_t> xq(size_t(row_bytes(wt.vec_dot_type, k)));
    for (int64_t n = 0; n < n_out; ++n)
        wt.dequantize_row(static_cast<const uint8_t*>(w.data) + n * w_row, &wf[size_t(n * k)], k);
    for (int64_t t = 0; t < n_tokens; ++t) {
        xt.quantize_row(x + t * k, xq.data(), k);
        xt.dequantize_row(xq.data(), &xf[size_t(t * k)], k);
    }
    float* y = a.out.as<float>();
    if (wt.min_offset >= 0) return reference_with_block_sums(a, wf, xf, wt.min_offset);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t n = 0; n < n_out; ++n) {
            double sum = 0.0;
            for (int64_t i = 0; i < k; ++i)
                sum += double(wf[size_t(n * k + i)]) * double(xf[size_t(t * k + i)]);
            y[t * n_out + n] = float(sum);
        }
}

double matmul_quant_flops(const KernelArgs& a) {
    return 2.0 * double(a.in[0].rows()) * double(a.in[1].dim(0)) * double(a.in[1].dim(1));
}

// ---- the op-table rows: one per traits row with a vec_dot, named by it ("matmul_q4_k") ----

namespace {

// Does level `hi` run other kernels than level `lo` for weights of `type`? Where it does not, the row
// leaves `hi` empty, so a plan at `hi` binds (and its dump names) the level below.
bool runs_other_kernels(DType type, SimdLevel hi, SimdLevel lo) {
    const QuantTraits &h = *quant_traits_at(type, hi), &l = *quant_traits_at(type, lo);
    return h.vec_dot != l.vec_dot || h.vec_dot4 != l.vec_dot4 || h.gemm != l.gemm ||
           h.packed_gemm != l.packed_gemm;
}
bool quantizes_otherwise(DType type, SimdLevel hi, SimdLevel lo) {
    const DType act = quant_traits_at(type, lo)->vec_dot_type;
    return quant_traits_at(act, hi)->quantize_row != quant_traits_at(act, lo)->quantize_row;
}

// "gemm" where the traits of the bound level have one for the weight's type: every call goes through it;
// "gemm_q4_0x8" for a weight repacked at load, which runs the GEMM of its layout.
const char* gemm_variant(std::span<const TensorDesc> inputs, SimdLevel level) {
    const QuantTraits* t = inputs.size() == 2 ? quant_traits_at(inputs[1].dtype, level) : nullptr;
    if (t && inputs[1].layout && t->packed_gemm) return t->packed_variant;
    return t && t->gemm ? "gemm" : nullptr;
}

}  // namespace

std::span<const OpDef> matmul_quant_rows() {
    static const std::vector<OpDef> rows = [] {
        std::vector<OpDef> out;
        for (const DType type : runnable_quantized_weight_types()) {
            const QuantTraits* tr = quant_traits_at(type, SimdLevel::Scalar);
            const bool avx2 = runs_other_kernels(type, SimdLevel::Avx2, SimdLevel::Scalar);
            const bool avx512 = runs_other_kernels(type, SimdLevel::Avx512, SimdLevel::Avx2);
            out.push_back({
                .name = tr->matmul_kernel,
                .graph_op = "matmul",
                .n_inputs = 2,
                .packed_input = 1,
                .infer = matmul_quant_infer,
                .scratch_bytes = matmul_quant_scratch_bytes,
                .work_items = matmul_quant_work_items,
                .grain = 32,
                .run = {.scalar = run_at<SimdLevel::Scalar>,
                        .avx2 = avx2 ? run_at<SimdLevel::Avx2> : nullptr,
                        .avx512 = avx512 ? run_at<SimdLevel::Avx512> : nullptr},
                .prepare = {.scalar = prepare_at<SimdLevel::Scalar>,
                            .avx2 = quantizes_otherwise(type, SimdLevel::Avx2, SimdLevel::Scalar)
                                        ? prepare_at<SimdLevel::Avx2>
                                        : nullptr},
                .prepare_items = matmul_quant_prepare_items,
                .reference = matmul_quant_reference,
                .flops = matmul_quant_flops,
                .path_variant = gemm_variant,
            });
        }
        return out;
    }();
    return rows;
}

}  // namespace graphrun::ops
