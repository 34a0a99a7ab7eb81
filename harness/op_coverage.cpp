// harness/op_coverage.cpp — the coverage registry, the kernel paths and the split runs the walk shares.
#include "harness/op_coverage.h"

#include "ops/quant/kernels.h"

namespace graphrun::testing {

KernelArgs OpCase::args(const ops::OpDef& op) {
    if (op.scratch_bytes) scratch.resize(size_t(op.scratch_bytes(call.node(op.op_name()))));
    KernelArgs a = call.args();
    a.scratch = scratch.data();
    a.scratch_bytes = int64_t(scratch.size());
    if (op.writes_state) a.out.data = a.in[0].data;
    return a;
}

namespace {

// Filled at static initialisation by every harness/<family>_shapes.cpp; read only after it (the tests'
// and benchmarks' registration runs from main), so no file depends on another's initialisation order.
std::vector<OpCoverage>& registry() {
    static std::vector<OpCoverage> coverages;
    return coverages;
}

// Every path the dispatcher can be set to, lowest first.
constexpr KernelPath kKernelPaths[] = {
    {"scalar", ops::SimdLevel::Scalar},
    {"avx2", ops::SimdLevel::Avx2},
    {"avx512", ops::SimdLevel::Avx512},
};

std::vector<int64_t> cuts_of(Split split, int64_t n) {
    switch (split) {
        case Split::Whole:
            return {};
        case Split::OddCuts:
            return odd_cuts(n);
        case Split::EachUnit: {
            std::vector<int64_t> cuts;
            for (int64_t i = 1; i < n; ++i) cuts.push_back(i);
            return cuts;
        }
    }
    return {};
}

}  // namespace

std::string shape_label(const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s;
}

OpShape same_shape_f32(std::vector<int64_t> shape, int n_inputs, uint32_t seed, float lo, float hi) {
    return {shape_label(shape), [=] {
                int64_t n = 1;
                for (int64_t d : shape) n *= d;
                OpCall c;
                for (int i = 0; i < n_inputs; ++i)
                    c.in.push_back(f32_tensor(shape, random_floats(size_t(n), seed + uint32_t(i), lo, hi)));
                c.out = output_tensor(DType::F32, shape);
                return op_case(std::move(c));
            }};
}

TestTensor matrix_of(DType type, int64_t rows, int64_t cols, const std::vector<float>& values) {
    if (type == DType::F32) return f32_tensor({rows, cols}, values);
    if (type == DType::F16) return f16_tensor({rows, cols}, values);
    const ops::QuantTraits* tr = ops::quant_traits_at(type, ops::SimdLevel::Scalar);
    if (!tr || !tr->quantize_row)
        throw std::invalid_argument(std::string("matrix_of: no quantizer for ") + dtype_name(type));
    const int64_t row = row_bytes(type, cols);
    std::vector<uint8_t> bytes(size_t(rows * row));
    for (int64_t r = 0; r < rows; ++r) tr->quantize_row(&values[size_t(r * cols)], &bytes[size_t(r * row)], cols);
    return raw_tensor(type, {rows, cols}, bytes.data(), bytes.size());
}

bool register_op_coverage(OpCoverage coverage) {
    registry().push_back(std::move(coverage));
    return true;
}

const std::vector<OpCoverage>& op_coverages() {
    return registry();
}

const OpCoverage* find_op_coverage(std::string_view row) {
    for (const OpCoverage& c : registry())
        if (c.row == row) return &c;
    return nullptr;
}

double bytes_moved(const OpCoverage& coverage, const OpCase& c) {
    if (coverage.bytes_moved) return coverage.bytes_moved(c);
    double bytes = double(c.call.out.bytes.size());
    for (const TestTensor& t : c.call.in) bytes += double(t.bytes.size());
    return bytes;
}

std::vector<KernelPath> kernel_paths_on_this_cpu() {
    std::vector<KernelPath> paths;
    for (const KernelPath& p : kKernelPaths)
        if (ops::simd_level_available(p.level)) paths.push_back(p);
    return paths;
}

const char* split_name(Split split) {
    switch (split) {
        case Split::Whole:
            return "one range";
        case Split::OddCuts:
            return "ranges cut at 2/7 and 5/7";
        case Split::EachUnit:
            return "one range per unit";
    }
    return "?";
}

void run_case(const ops::OpDef& op, ops::SimdLevel level, const KernelArgs& args, Split split) {
    if (op.prepare) {
        const int64_t n = op.prepare_items(args);
        run_split(op.prepare.at(level), args, n, cuts_of(split, n));
    }
    const int64_t n = op.work_items(args);
    run_split(op.run.at(level), args, n, cuts_of(split, n));
}

}  // namespace graphrun::testing
