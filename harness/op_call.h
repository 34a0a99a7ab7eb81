// harness/op_call.h — owning buffers for one op call: build KernelArgs/TensorRef from std::vectors,
// run a kernel over ranges split at chosen places, compare by NMSE, read an infer error message.
// Generic over ops (nothing here knows a particular op) and free of any test framework: the op tests
// (tests/common/op_test_util.h adds their GoogleTest checks), the op-table walk (harness/op_coverage.h) and the
// benchmarks (bench/) all build their calls from it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/op_table.h"
#include "runtime/fp16.h"
#include "runtime/kernel.h"

namespace graphrun::testing {

// One tensor: dtype, shape (outermost first) and the bytes it owns.
struct TestTensor {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;

    int64_t n_elements() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    // A view a kernel can use; valid until `bytes` is resized.
    TensorRef ref() {
        TensorRef t;
        t.dtype = dtype;
        t.rank = int(shape.size());
        for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
        t.data = bytes.data();
        return t;
    }
    ops::TensorDesc desc() const { return {dtype, shape}; }
    std::vector<float> floats() const {  // f32 tensors only
        std::vector<float> v(static_cast<size_t>(n_elements()));
        std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
        return v;
    }
};

inline int64_t tensor_bytes(DType dtype, const std::vector<int64_t>& shape) {
    if (shape.empty()) return 0;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    return rows * row_bytes(dtype, shape.back());
}

// Raw bytes of any dtype (f16 halves, q8_0 blocks, ...), checked against the shape's size.
inline TestTensor raw_tensor(DType dtype, std::vector<int64_t> shape, const void* data, size_t size) {
    TestTensor t{dtype, std::move(shape), {}};
    if (int64_t(size) != tensor_bytes(dtype, t.shape))
        throw std::invalid_argument("raw_tensor: size mismatch");
    t.bytes.resize(size);
    std::memcpy(t.bytes.data(), data, size);
    return t;
}

inline TestTensor f32_tensor(std::vector<int64_t> shape, const std::vector<float>& values) {
    return raw_tensor(DType::F32, std::move(shape), values.data(), values.size() * sizeof(float));
}

inline TestTensor i32_tensor(std::vector<int64_t> shape, const std::vector<int32_t>& values) {
    return raw_tensor(DType::I32, std::move(shape), values.data(), values.size() * sizeof(int32_t));
}

// f32 values stored as f16 (rounded to nearest even).
inline TestTensor f16_tensor(std::vector<int64_t> shape, const std::vector<float>& values) {
    std::vector<uint16_t> halves(values.size());
    for (size_t i = 0; i < values.size(); ++i) halves[i] = f32_to_fp16(values[i]);
    return raw_tensor(DType::F16, std::move(shape), halves.data(), halves.size() * sizeof(uint16_t));
}

// An output buffer; f32 outputs start as NaN so any element a kernel forgets to write shows.
inline TestTensor output_tensor(DType dtype, std::vector<int64_t> shape) {
    TestTensor t{dtype, std::move(shape), {}};
    t.bytes.resize(size_t(tensor_bytes(dtype, t.shape)));
    if (dtype == DType::F32) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (size_t i = 0; i < t.bytes.size(); i += sizeof(float)) std::memcpy(&t.bytes[i], &nan, sizeof nan);
    }
    return t;
}

// One op call with its own buffers. Copying an OpCall copies the buffers, so the same call can be run
// once through the kernel and once through the reference.
struct OpCall {
    std::vector<TestTensor> in;
    TestTensor out;
    OpParams params;

    KernelArgs args() {
        KernelArgs a;
        a.n_in = int(in.size());
        for (size_t i = 0; i < in.size(); ++i) a.in[i] = in[i].ref();
        a.out = out.ref();
        a.params = params;
        return a;
    }
    // The same, with the output written over input 0 (ops whose row says in_place).
    KernelArgs args_in_place() {
        KernelArgs a = args();
        a.out.data = a.in[0].data;
        return a;
    }
    ops::NodeInfo node(const std::string& op) const {
        ops::NodeInfo n{"test." + op, op, {}, params, {}};
        for (const TestTensor& t : in) n.inputs.push_back(t.desc());
        return n;
    }
};

// Changes fields of an op call's params: edit_params<RopeParams>(c.params, [](RopeParams& p) { p.n_head = 5;
// }).
template <typename P, typename Change>
void edit_params(OpParams& params, Change change) {
    P p = params.get<P>();
    change(p);
    params = OpParams::of(p);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

// sum (got - want)^2 / sum want^2; NaN anywhere gives NaN, which fails any `<` check.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
    double err = 0, ref = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        const double d = double(got[i]) - double(want[i]);
        err += d * d;
        ref += double(want[i]) * double(want[i]);
    }
    return ref > 0 ? err / ref : err;
}

// Runs `fn` over [0, n) as the ranges [0, c0), [c0, c1), ..., [ck, n); cuts must be sorted in [0, n].
inline void run_split(KernelFn fn, const KernelArgs& args, int64_t n, const std::vector<int64_t>& cuts) {
    int64_t begin = 0;
    for (int64_t cut : cuts) {
        if (cut < begin || cut > n)
            throw std::invalid_argument("run_split: cuts must be sorted inside [0, n]");
        fn(args, begin, cut);
        begin = cut;
    }
    fn(args, begin, n);
}

// Two cuts at uneven places (about 2/7 and 5/7 of n), so ranges start and end off any block size.
inline std::vector<int64_t> odd_cuts(int64_t n) {
    return {n * 2 / 7, n * 5 / 7};
}

// The whole op through its table row's kernels of `level`, as a plan at that level binds them: prepare
// (if any) over its units, then run; with `split`, each phase runs as three ranges cut at odd_cuts of its
// unit count.
inline void run_op(const ops::OpDef& op, const KernelArgs& args, bool split,
                   ops::SimdLevel level = ops::active_simd_level()) {
    if (op.prepare) {
        const int64_t n = op.prepare_items(args);
        run_split(op.prepare.at(level), args, n, split ? odd_cuts(n) : std::vector<int64_t>{});
    }
    const int64_t n = op.work_items(args);
    run_split(op.run.at(level), args, n, split ? odd_cuts(n) : std::vector<int64_t>{});
}

// The op's row, or a test failure naming the op.
inline const ops::OpDef& op_row(const char* name) {
    const ops::OpDef* op = ops::find_op(name);
    if (!op) throw std::runtime_error(std::string("op table has no row '") + name + "'");
    return *op;
}

// The message `infer` throws for this node, or "" when it accepts it.
inline std::string infer_error(const ops::OpDef& op, const ops::NodeInfo& node) {
    try {
        op.infer(node);
    } catch (const ops::PlanError& e) {
        return e.what();
    }
    return "";
}

}  // namespace graphrun::testing
