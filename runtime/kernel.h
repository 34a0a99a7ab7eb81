// runtime/kernel.h — what a kernel is handed at run time, and a step of a plan.
//
// The planner (graph/) turns every graph node into a Step: a kernel function pointer plus
// KernelArgs whose tensors already point into the arena, the mapped weights or planned state (the
// KV cache).
// The executor (runtime/executor.h) only calls `run(args, begin, end)` over ranges of
// `run_items` work units; it never allocates and never looks anything up by name.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime/dtype.h"

namespace graphrun {

constexpr int kMaxRank = 4;
constexpr int kMaxInputs = 5;

// A tensor as a kernel sees it: row-major, shape outermost first, contiguous.
//   x (n_tokens, n_embd): shape = {n_tokens, n_embd}, rank 2; x[t, i] at data + t * n_embd + i.
struct TensorRef {
    DType dtype = DType::F32;
    int rank = 0;
    std::array<int64_t, kMaxRank> shape{};
    void* data = nullptr;
    bool packed = false;  // a weight repacked at load (TensorDesc::layout), not its rows as stored

    int64_t dim(int i) const { return shape[i < 0 ? rank + i : i]; }
    int64_t cols() const { return rank ? shape[rank - 1] : 1; }  // innermost dimension
    int64_t rows() const {                                       // product of all other dimensions
        int64_t n = 1;
        for (int i = 0; i + 1 < rank; ++i) n *= shape[i];
        return n;
    }
    int64_t n_elements() const { return rows() * cols(); }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data);
    }
};

// An op's settings (its attributes), bound from the graph at plan time. Each op family keeps them in
// a params struct of its own (RopeParams in ops/rope.h, ...) and declares beside its kernel which
// attributes a graph may set and in what range (ops/op_table.h: AttrDecl); this holds one such struct
// by value, tagged with its type, so the runtime needs to know no op's fields. Kernels read their
// struct with get<P>() (a copy of at most 64 bytes) once per call. All constexpr, so op-table rows
// holding default params are constants.
class OpParams {
  public:
    static constexpr size_t kCapacity = 64;

    template <typename P>
    static constexpr OpParams of(const P& params) {
        static_assert(std::is_trivially_copyable_v<P> && sizeof(P) <= kCapacity,
                      "an op's params struct must be a small plain struct");
        const auto bytes = std::bit_cast<std::array<unsigned char, sizeof(P)>>(params);
        OpParams p;
        for (size_t i = 0; i < sizeof(P); ++i) p.bytes_[i] = bytes[i];
        p.tag_ = &tag<P>;
        return p;
    }
    template <typename P>
    constexpr P get() const {
        if (tag_ != &tag<P>) throw std::logic_error("OpParams: read as another op's params struct");
        std::array<unsigned char, sizeof(P)> bytes{};
        for (size_t i = 0; i < sizeof(P); ++i) bytes[i] = bytes_[i];
        return std::bit_cast<P>(bytes);
    }
    template <typename P>
    constexpr bool holds() const {
        return tag_ == &tag<P>;
    }
    constexpr bool empty() const { return tag_ == nullptr; }

  private:
    template <typename P>
    static constexpr char tag = 0;  // one address per params type
    std::array<unsigned char, kCapacity> bytes_{};
    const char* tag_ = nullptr;
};

struct KernelArgs {
    std::array<TensorRef, kMaxInputs> in{};
    int n_in = 0;
    TensorRef out;
    OpParams params;
    void* scratch = nullptr;  // planner-assigned arena bytes for the op's own temporaries
    int64_t scratch_bytes = 0;
};

// A kernel runs work units [begin, end) of its op; units are rows, output columns or heads,
// whatever the op documents. Kernels write only into args.out and args.scratch (args.out is planned
// state, the KV cache, for ops that update it). The executor cuts ranges at multiples of the step's
// grain (and at the end), and a kernel's result for a unit must not depend on the range it is computed
// in: that is what keeps every thread count bit-identical.
using KernelFn = void (*)(const KernelArgs& args, int64_t begin, int64_t end);

struct Step {
    std::string label;  // "blk.0.attn_q (matmul_f32)": for plan dumps and errors, not used while running
    std::string node;   // "blk.0.attn_q": the graph node (for profiles and traces)
    const char* kernel = nullptr;                      // "matmul_f32": the op table row's name
    double (*flops)(const KernelArgs& args) = nullptr;  // the op's FLOP count, for profiles
    KernelFn prepare = nullptr;  // optional first phase (for example: quantize activations once)
    int64_t prepare_items = 0;
    KernelFn run = nullptr;
    int64_t run_items = 0;
    int64_t grain = 1;  // smallest range worth giving a thread
    KernelArgs args;
};

}  // namespace graphrun
