// harness/embedding_shapes.cpp — embedding's shapes for the op-table walk: a table of every type with a
// float conversion.
//   ids (T) i32, table (n_vocab, n_embd) -> y (T, n_embd) f32
#include "harness/op_coverage.h"
#include "ops/quant/traits.h"

namespace graphrun::testing {
namespace {

OpShape embedding_shape(DType type, int64_t n_vocab, int64_t n_embd, std::vector<int32_t> ids, uint32_t seed) {
    const std::string label = std::string(dtype_name(type)) + ".vocab" + std::to_string(n_vocab) + "x" +
                              std::to_string(n_embd) + ".T" + std::to_string(ids.size());
    return {label, [=] {
                OpCall c;
                c.in = {i32_tensor({int64_t(ids.size())}, ids),
                        matrix_of(type, n_vocab, n_embd, random_floats(size_t(n_vocab * n_embd), seed))};
                c.out = output_tensor(DType::F32, {int64_t(ids.size()), n_embd});
                return op_case(std::move(c));
            }};
}

// Every type that can hold a table: a float conversion and a quantizer to make one with.
std::vector<DType> table_types() {
    std::vector<DType> types;
    for (const DTypeTraits& t : dtype_table())
        if (const ops::QuantTraits* tr = ops::quant_traits(t.type); tr && tr->dequantize_row && tr->quantize_row)
            types.push_back(t.type);
    return types;
}

// A lookup reads the ids, one table row per token, and writes the output.
double embedding_bytes(const OpCase& c) {
    const TestTensor& table = c.call.in[1];
    const double n_tokens = double(c.call.in[0].n_elements());
    return double(c.call.in[0].bytes.size()) + n_tokens * double(row_bytes(table.dtype, table.shape[1])) +
           double(c.call.out.bytes.size());
}

const bool embedding_registered = register_op_coverage({
    .row = "embedding",
    .max_nmse = 0,  // the row's decoding, as the reference
    .test_shapes =
        [] {
            std::vector<OpShape> s;
            for (DType type : table_types()) {
                const int64_t n_embd = type == DType::F32 || type == DType::F16 ? 96 : 2 * dtype_traits(type).block_size;
                s.push_back(embedding_shape(type, 13, n_embd, {5, 0, 12, 5, 3, 12, 1}, uint32_t(type) + 7));
            }
            return s;
        },
    .bench_shapes =
        [] {
            // Rows of n_embd 4096 from a 2048-row slice of the vocabulary (a whole 32000-row table would
            // take seconds to build and the lookup reads only T rows of it).
            std::vector<OpShape> s;
            std::vector<int32_t> prompt(32);
            for (size_t t = 0; t < prompt.size(); ++t) prompt[t] = int32_t(t * 61 % 2048);
            for (DType type : {DType::F16, DType::Q8_0, DType::Q6_K}) {
                s.push_back(embedding_shape(type, 2048, 4096, {1000}, 1));
                s.push_back(embedding_shape(type, 2048, 4096, prompt, 1));
            }
            return s;
        },
    .bytes_moved = embedding_bytes,
});

}  // namespace
}  // namespace graphrun::testing
