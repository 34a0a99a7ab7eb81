// ops/matmul_quant.cpp — matmul on quantized weights: matmul_q8 (Q8_0) and matmul_q4 (Q4_0).
//
//   x (n_tokens, K) f32 · W (N, K)ᵀ Q8_0|Q4_0 -> y (n_tokens, N) f32
//   scratch: xq (n_tokens, K/32 blocks) Q8_0, the activations quantized once per call.
//
// prepare (work units: tokens) quantizes x into xq; run (work units: weight rows n, i.e. output
// columns) computes y[t, n] = vec_dot(W[n], xq[t]). Decode is bound by reading W, so every weight
// row is streamed from memory once per call: rows go in tiles small enough to stay in L2 while
// all tokens pass over them.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/op_rows.h"
#include "ops/quant.h"
#include "ops/quant_kernels.h"

namespace graphrun::ops {

namespace {

constexpr int64_t kRowTile = 16;  // 16 rows of K = 4096 in Q8_0 are 70 KiB: well inside L2

TensorDesc infer_quant(const NodeInfo& node, DType weight_type) {
    if (node.inputs.size() != 2)
        throw PlanError(node, "expects 2 inputs (x, weight), got " + std::to_string(node.inputs.size()));
    const TensorDesc& x = node.inputs[0];
    const TensorDesc& w = node.inputs[1];
    if (x.dtype != DType::F32) throw PlanError(node, "input x is " + x.str() + ", expected f32");
    if (x.shape.empty()) throw PlanError(node, "input x is a scalar, expected rows (n_tokens, K)");
    if (w.dtype != weight_type)
        throw PlanError(node, "weight is " + w.str() + ", expected " + dtype_name(weight_type));
    if (w.shape.size() != 2) throw PlanError(node, "weight is " + w.str() + ", expected a matrix (N, K)");
    const int64_t k = w.shape[1];
    if (x.shape.back() != k)
        throw PlanError(node, "input x " + x.str() + " has rows of " + std::to_string(x.shape.back()) +
                                  " elements, weight " + w.str() + " has rows of " + std::to_string(k));
    if (k % kQK != 0)
        throw PlanError(node, "weight " + w.str() + " has rows of " + std::to_string(k) +
                                  " elements, not a multiple of the " + dtype_name(weight_type) +
                                  " block size " + std::to_string(kQK));
    TensorDesc y{DType::F32, x.shape};
    y.shape.back() = w.shape[0];
    return y;
}

int64_t n_tokens_of(const KernelArgs& a) {
    return a.in[0].rows();
}

// The op with explicit dot kernels; matmul_q8_run / matmul_q4_run pass the dispatched ones.
// dot4 (four weight rows per call, may be nullptr) takes the rows four at a time, dot the rest.
void run_rows(const KernelArgs& a, int64_t begin, int64_t end, VecDotFn dot, VecDot4Fn dot4,
              DType weight_type) {
    const TensorRef& w = a.in[1];
    const int64_t k = w.dim(1), n_out = w.dim(0), n_tokens = n_tokens_of(a);
    const int64_t w_row = row_bytes(weight_type, k), xq_row = row_bytes(DType::Q8_0, k);
    const auto* wq = static_cast<const uint8_t*>(w.data);
    const auto* xq = static_cast<const uint8_t*>(a.scratch);
    float* y = a.out.as<float>();
    for (int64_t n0 = begin; n0 < end; n0 += kRowTile) {
        const int64_t n1 = std::min(end, n0 + kRowTile);
        for (int64_t t = 0; t < n_tokens; ++t) {
            const uint8_t* x_t = xq + t * xq_row;
            float* y_t = y + t * n_out;
            int64_t n = n0;
            if (dot4)
                for (; n + 4 <= n1; n += 4) dot4(k, wq + n * w_row, w_row, x_t, y_t + n);
            for (; n < n1; ++n) y_t[n] = dot(k, wq + n * w_row, x_t);
        }
    }
}

// The whole op as plain loops, sharing no kernel code: weights dequantized to float, x quantized
// to Q8_0 by the reference quantizer and dequantized, products summed in double. Every product of
// a weight (11-bit scale · 4/8-bit int) and an activation is exact in double, so this is the exact
// value the integer kernels approximate up to float rounding.
void reference_quant(const KernelArgs& a, DType weight_type) {
    const TensorRef& w = a.in[1];
    const int64_t k = w.dim(1), n_out = w.dim(0), n_tokens = n_tokens_of(a);
    const int64_t w_row = row_bytes(weight_type, k);
    const auto* x = a.in[0].as<const float>();
    std::vector<float> wf(size_t(n_out * k)), xf(size_t(n_tokens * k));
    std::vector<block_q8_0> xq(size_t(k / kQK));
    for (int64_t n = 0; n < n_out; ++n) {
        const auto* row = static_cast<const uint8_t*>(w.data) + n * w_row;
        if (weight_type == DType::Q8_0)
            dequantize_row_q8_0(reinterpret_cast<const block_q8_0*>(row), &wf[size_t(n * k)], k);
        else
            dequantize_row_q4_0(reinterpret_cast<const block_q4_0*>(row), &wf[size_t(n * k)], k);
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
        quantize_row_q8_0_ref(x + t * k, xq.data(), k);
        dequantize_row_q8_0(xq.data(), &xf[size_t(t * k)], k);
    }
    float* y = a.out.as<float>();
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t n = 0; n < n_out; ++n) {
            double sum = 0.0;
            for (int64_t i = 0; i < k; ++i)
                sum += double(wf[size_t(n * k + i)]) * double(xf[size_t(t * k + i)]);
            y[t * n_out + n] = float(sum);
        }
}

TensorDesc matmul_q8_infer(const NodeInfo& node) {
    return infer_quant(node, DType::Q8_0);
}
TensorDesc matmul_q4_infer(const NodeInfo& node) {
    return infer_quant(node, DType::Q4_0);
}

int64_t matmul_quant_scratch_bytes(const NodeInfo& node) {
    const TensorDesc& x = node.inputs[0];
    const int64_t k = x.shape.back();
    return x.n_elements() / k * row_bytes(DType::Q8_0, k);
}

int64_t matmul_quant_work_items(const KernelArgs& a) {
    return a.in[1].dim(0);
}
int64_t matmul_quant_prepare_items(const KernelArgs& a) {
    return n_tokens_of(a);
}

// xq[t] = Q8_0(x[t]) for tokens [begin, end).
void matmul_quant_prepare(const KernelArgs& a, int64_t begin, int64_t end) {
    const int64_t k = a.in[0].cols();
    const QuantizeRowFn quantize = quant_traits(DType::Q8_0)->quantize_row;
    const auto* x = a.in[0].as<const float>();
    auto* xq = static_cast<uint8_t*>(a.scratch);
    for (int64_t t = begin; t < end; ++t) quantize(x + t * k, xq + t * row_bytes(DType::Q8_0, k), k);
}

void matmul_q8_run(const KernelArgs& a, int64_t begin, int64_t end) {
    run_rows(a, begin, end, quant_traits(DType::Q8_0)->vec_dot, active_vec_dot4(DType::Q8_0), DType::Q8_0);
}
void matmul_q4_run(const KernelArgs& a, int64_t begin, int64_t end) {
    run_rows(a, begin, end, quant_traits(DType::Q4_0)->vec_dot, active_vec_dot4(DType::Q4_0), DType::Q4_0);
}

void matmul_q8_reference(const KernelArgs& a) {
    reference_quant(a, DType::Q8_0);
}
void matmul_q4_reference(const KernelArgs& a) {
    reference_quant(a, DType::Q4_0);
}

double matmul_quant_flops(const KernelArgs& a) {
    return 2.0 * double(n_tokens_of(a)) * double(a.in[1].dim(0)) * double(a.in[1].dim(1));
}

}  // namespace

void matmul_quant_run_with(const KernelArgs& a, int64_t begin, int64_t end, VecDotFn dot, VecDot4Fn dot4) {
    run_rows(a, begin, end, dot, dot4, a.in[1].dtype);
}

const OpDef kMatmulQ8Op = {
    .name = "matmul_q8",
    .graph_op = "matmul",
    .n_inputs = 2,
    .infer = matmul_q8_infer,
    .scratch_bytes = matmul_quant_scratch_bytes,
    .work_items = matmul_quant_work_items,
    .grain = 32,
    .run = matmul_q8_run,
    .prepare = matmul_quant_prepare,
    .prepare_items = matmul_quant_prepare_items,
    .reference = matmul_q8_reference,
    .flops = matmul_quant_flops,
    .simd_path = active_simd_level,
};

const OpDef kMatmulQ4Op = {
    .name = "matmul_q4",
    .graph_op = "matmul",
    .n_inputs = 2,
    .infer = matmul_q4_infer,
    .scratch_bytes = matmul_quant_scratch_bytes,
    .work_items = matmul_quant_work_items,
    .grain = 32,
    .run = matmul_q4_run,
    .prepare = matmul_quant_prepare,
    .prepare_items = matmul_quant_prepare_items,
    .reference = matmul_q4_reference,
    .flops = matmul_quant_flops,
    .simd_path = active_simd_level,
};

}  // namespace graphrun::ops
