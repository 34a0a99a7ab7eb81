// ops/op_table.h — the op table: one row per kernel, the only thing the planner knows of ops.
//
// An op is three small pieces (STYLE.md): shape/dtype inference run at plan time, a kernel that
// writes into memory it is given, and a plain-loop reference that tests hold the kernel against.
// Adding an op = those and its row (with its attribute declarations) in ops/<family>.cpp, declared in
// ops/op_rows.h, listed in all_ops() (ops/op_table.cpp); the quantized matmul rows: ops/quant/traits.cpp.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ops/cpu.h"
#include "runtime/kernel.h"

namespace graphrun::ops {

// A tensor at plan time: dtype and shape (outermost first), no memory yet.
struct TensorDesc {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    // nullptr: the bytes as the file stores them; else the layout a weight was repacked into at load
    // ("q4_0x8", ops/quant/packed.h): same shape, same bytes, other order. Only a kernel whose traits
    // name that layout (QuantTraits::packed_layout) is given such a tensor.
    const char* layout = nullptr;

    int64_t n_elements() const;
    int64_t nbytes() const;   // row_bytes of the innermost dimension times the other dimensions
    std::string str() const;  // "f32 (5, 64)"
};

// What inference sees of a node: its name, op, input descriptions and its params (the op's own struct).
struct NodeInfo {
    std::string name;  // node id from the graph, e.g. "blk.3.attn_q"
    std::string op;    // op as written in the graph, e.g. "matmul"
    std::vector<TensorDesc> inputs;
    OpParams params;
    std::vector<std::string> input_names;  // the tensors behind `inputs` ("blk.3.attn_q.weight"), for
                                           // messages; the planner fills it, may be empty elsewhere
};

// Errors read like "[rmsnorm] node 'blk.0.attn_norm': weight has 63 elements, input rows have 64".
class PlanError : public std::runtime_error {
  public:
    PlanError(const NodeInfo& node, const std::string& what);
    using std::runtime_error::runtime_error;
};

// ---- attributes: what each op declares a graph may set ----------------------------------------------
//
// An op's attributes live in a params struct of its own (ops/rope.h: RopeParams), and the op declares
// beside its kernel, as a table of AttrDecl, which fields a graph may set, of what kind and in what
// range. The binder (graph/bind_graph.cpp) checks every node against its op's table: an unknown attribute,
// a value out of range, a fraction where a whole number belongs or a missing required attribute is an
// error that names the node. A new op needs no edit to any shared struct.
//
//   constexpr AttrDecl kRopeAttrs[] = {
//       int_attr<&RopeParams::n_head>("n_head", 1, kMaxHeads, "heads in x"),
//       float_attr<&RopeParams::base>("rope_base", 1e-3, 1e12, "theta base", Optional),
//   };

enum class AttrKind { Int, Float, Choice };
enum AttrPresence : bool { Required = true, Optional = false };

struct AttrDecl {
    const char* name;  // as a graph writes it
    AttrKind kind;
    double min, max;      // inclusive; Choice: 0 .. choices - 1
    const char* choices;  // Choice: "normal|neox"; the graph writes a word, the field holds its index
    bool required;        // Optional: the params struct's default applies when the graph is silent
    const char* about;    // one line, for messages and docs
    OpParams (*set)(const OpParams& params, double value);  // value checked against kind and range first
    double (*get)(const OpParams& params);
};

// Limits shared by several ops' declarations (docs/security.md lists every limit).
constexpr int kMaxHeads = 4096;
constexpr int kMaxHeadDim = 4096;

namespace attr_detail {
template <typename M>
struct Member;
template <typename C, typename F>
struct Member<F C::*> {
    using Class = C;
    using Field = F;
};
template <auto Field>
constexpr AttrDecl make(const char* name, AttrKind kind, double min, double max, const char* choices,
                        bool required, const char* about) {
    using P = typename Member<decltype(Field)>::Class;
    using F = typename Member<decltype(Field)>::Field;
    return {name,
            kind,
            min,
            max,
            choices,
            required,
            about,
            [](const OpParams& params, double value) {
                P p = params.get<P>();
                p.*Field = static_cast<F>(value);
                return OpParams::of(p);
            },
            [](const OpParams& params) { return double(params.get<P>().*Field); }};
}
constexpr double count_choices(const char* choices) {
    double n = 1;
    for (const char* c = choices; *c; ++c) n += *c == '|';
    return n;
}
}  // namespace attr_detail

// A whole number in [min, max], held in an `int` field.
template <auto Field>
constexpr AttrDecl int_attr(const char* name, double min, double max, const char* about,
                            AttrPresence presence = Required) {
    static_assert(std::is_same_v<typename attr_detail::Member<decltype(Field)>::Field, int>);
    return attr_detail::make<Field>(name, AttrKind::Int, min, max, nullptr, presence, about);
}
// A finite number in [min, max], held in a `float` field.
template <auto Field>
constexpr AttrDecl float_attr(const char* name, double min, double max, const char* about,
                              AttrPresence presence = Required) {
    static_assert(std::is_same_v<typename attr_detail::Member<decltype(Field)>::Field, float>);
    return attr_detail::make<Field>(name, AttrKind::Float, min, max, nullptr, presence, about);
}
// One word of `choices` ("normal|neox"), held as its index in an `int` field.
template <auto Field>
constexpr AttrDecl choice_attr(const char* name, const char* choices, const char* about,
                               AttrPresence presence = Optional) {
    static_assert(std::is_same_v<typename attr_detail::Member<decltype(Field)>::Field, int>);
    return attr_detail::make<Field>(name, AttrKind::Choice, 0, attr_detail::count_choices(choices) - 1,
                                    choices, presence, about);
}

// "1e-05", "6", or a Choice's word ("neox"): an attribute's value as a graph would write it.
std::string attr_value_text(const AttrDecl& decl, const OpParams& params);

// The words of a Choice's `choices` ("normal|neox"), the one reading of that string: the word at
// `index` (in range), and the index of `word`, -1 when it is none of them.
std::string_view choice_word(std::string_view choices, int index);
int choice_index(std::string_view choices, std::string_view word);

// ---- the op table ------------------------------------------------------------------------------------

// One row per kernel. Rows are written with designated initializers (ops/<family>.cpp), so a field
// given in the wrong place does not compile; fields left out are null.
struct OpDef {
    const char* name = nullptr;      // kernel name as the plan dump shows it: "matmul_q8_0"
    const char* graph_op = nullptr;  // the op a graph names, when several kernels serve it: "matmul"
    int n_inputs = 0;
    int n_optional_inputs = 0;  // more inputs a node may add after the n_inputs (rope's freq_factors)
    bool in_place = false;  // output may share input 0's memory (same shape and dtype, read before written)
    // Planned state (the KV cache, graph/plan.h): bit i set means input i must be a state tensor, and
    // every input whose bit is clear must not be one. With writes_state the op updates input 0 (state)
    // in place and its output is that state, not a new tensor; the others only read it.
    uint32_t state_inputs = 0;
    bool writes_state = false;
    // The input that may be a weight repacked at load into its type's packed layout (graph/repack.h,
    // TensorDesc::layout), -1 for none. The repack decides before a kernel is chosen, so every kernel of
    // one graph op declares the same; a kernel is given the layout only where its traits name it.
    int packed_input = -1;
    std::span<const AttrDecl>
        attrs{};          // what a graph may set; every kernel of one graph op declares the same
    OpParams defaults{};  // the params struct with its default values
    TensorDesc (*infer)(const NodeInfo& node) = nullptr;       // throws PlanError
    int64_t (*scratch_bytes)(const NodeInfo& node) = nullptr;  // nullptr: no scratch
    int64_t (*work_items)(const KernelArgs& args) = nullptr;   // units `run` is split over
    int64_t grain = 1;                                         // smallest worthwhile range of units
    // The kernel per SIMD level (ops/cpu.h): the planner binds run.at(level) once per plan, and the plan
    // dump names run.level_of(level). A row with only a scalar kernel is plain C++ at every level.
    PerLevel<KernelFn> run{};
    PerLevel<KernelFn> prepare{};                                // optional first phase, bound likewise
    int64_t (*prepare_items)(const KernelArgs& args) = nullptr;  // with prepare
    void (*reference)(const KernelArgs& args) = nullptr;         // the whole op as plain loops
    double (*flops)(const KernelArgs& args) = nullptr;           // for benchmarks and the plan dump
    // The shape of the path run.at(level) takes on these inputs when a kernel has several ("gemm":
    // tiles of rows × tokens), else nullptr; nullptr for a row without variants.
    const char* (*path_variant)(std::span<const TensorDesc> inputs, SimdLevel level) = nullptr;

    const char* op_name() const { return graph_op ? graph_op : name; }
};

std::span<const OpDef* const> op_table();
const OpDef* find_op(std::string_view kernel_name);
// The first row serving graph op `op` ("matmul", "rmsnorm"): its attribute table and defaults, which
// every kernel of that op shares. nullptr for an op no row serves.
const OpDef* find_graph_op(std::string_view op);

// Picks the kernel for a graph op given its inputs: "matmul" with a Q8_0 weight -> "matmul_q8_0", with a
// Q4_K weight -> "matmul_q4_k" (the weight type's QuantTraits row names it). Ops with a single kernel
// map to themselves. Throws PlanError for an unknown op, or naming the weight tensor, its type and
// the op when no kernel runs that type.
const OpDef& choose_kernel(const NodeInfo& node);

}  // namespace graphrun::ops
