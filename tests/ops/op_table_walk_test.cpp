// tests/ops/op_table_walk_test.cpp — OpTableWalk: one table-driven suite over every row of the op table
// (ops/op_table.h), as ggml's test-backend-ops walks its ops. For every row and every kernel path this
// CPU has (harness/op_coverage.h: scalar, AVX2, AVX-512), on the row's test shapes (harness/*_shapes.cpp):
//   - infer describes the output the shape's buffers have;
//   - the kernel, run through the row (prepare, then run) as one range, as ranges cut at odd places and
//     as one range per unit, equals the row's reference within the row's declared NMSE bound (0: equal);
//   - the split runs and the in-place run (rows that allow it) give the one-range run's bits: a unit's
//     result does not depend on the range it is computed in (what keeps thread counts bit-identical);
//   - infer refuses a node without inputs with a message naming the op.
// A row without a reference, a shape generator or shapes fails by name. Per-op behaviour (hand-computed
// values, bad-node messages, graphs) stays in the ops_*_test.cpp files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness/op_coverage.h"
#include "ops/op_table.h"
#include "tests/common/same_bits.h"

namespace graphrun::testing {
namespace {

std::vector<std::string> row_names() {
    std::vector<std::string> names;
    for (const ops::OpDef* op : ops::op_table()) names.push_back(op->name);
    return names;
}

// The values a comparison by NMSE reads; empty for dtypes that only compare by bytes.
std::vector<float> values_of(const TestTensor& t) {
    if (t.dtype == DType::F32) return t.floats();
    std::vector<float> v;
    if (t.dtype == DType::F16) {
        for (size_t i = 0; i + 1 < t.bytes.size(); i += 2) {
            uint16_t h;
            std::memcpy(&h, &t.bytes[i], 2);
            v.push_back(fp16_to_f32(h));
        }
    }
    return v;
}

// "" when what the kernel wrote is within `max_nmse` of what the reference wrote.
// A bound of 0 means the same bits: NMSE cannot judge values that overflow to ±inf (f16 stores of large
// floats, as kv_write's shapes test) or NaN that both sides keep, and exact ops promise bits anyway.
std::string compare_to_reference(const TestTensor& out, const TestTensor& want, double max_nmse) {
    if (max_nmse == 0)
        return same_bits(out.bytes, want.bytes) ? "" : "output bits differ from the reference's (bound 0: exact)";
    const std::vector<float> g = values_of(out), w = values_of(want);
    if (!g.empty() || !w.empty()) {
        const double err = nmse(g, w);
        if (!(max_nmse == 0 ? err == 0 : err < max_nmse))
            return "NMSE " + std::to_string(err) + " against the reference, bound " + std::to_string(max_nmse);
    } else if (!same_bits(out.bytes, want.bytes)) {
        return "output bytes differ from the reference's";
    }
    return "";
}

TEST(OpTableWalk, EveryRowHasAReferenceAndShapes) {
    for (const ops::OpDef* op : ops::op_table()) {
        const std::string name = op->name;
        EXPECT_NE(op->reference, nullptr) << "op-table row '" << name << "' has no reference";
        EXPECT_NE(op->flops, nullptr) << "op-table row '" << name << "' has no flops (the benchmark's FLOP/s)";
        const OpCoverage* coverage = find_op_coverage(name);
        if (!coverage) {
            ADD_FAILURE() << "op-table row '" << name
                          << "' has no shape generator: add harness/<family>_shapes.cpp (docs/adding-an-op.md)";
            continue;
        }
        EXPECT_TRUE(coverage->test_shapes && !coverage->test_shapes().empty()) << name << " has no test shapes";
        EXPECT_TRUE(coverage->bench_shapes && !coverage->bench_shapes().empty())
            << name << " has no benchmark shapes";
        EXPECT_GE(coverage->max_nmse, 0) << name;
    }
    std::map<std::string, int> seen;
    for (const OpCoverage& c : op_coverages()) {
        EXPECT_NE(ops::find_op(c.row), nullptr) << "shapes registered for '" << c.row << "', which no op-table row is";
        EXPECT_EQ(++seen[c.row], 1) << "shapes registered twice for '" << c.row << "'";
    }
}

// The paths walked are every level the dispatcher has that this CPU runs, and a row's kernel of a level
// is the one its level_of names, at or below that level (so a dump's name is what runs).
TEST(OpTableWalk, WalksEveryPathThisCpuHas) {
    std::vector<std::string> walked;
    for (const KernelPath& p : kernel_paths_on_this_cpu()) {
        walked.push_back(p.name);
        for (const ops::OpDef* op : ops::op_table()) {
            ASSERT_TRUE(op->run.scalar) << op->name << " has no scalar kernel";
            EXPECT_LE(op->run.level_of(p.level), p.level) << op->name << " under " << p.name;
            EXPECT_EQ(op->run.at(p.level), op->run.at(op->run.level_of(p.level))) << op->name << " under " << p.name;
            if (op->prepare) {
                EXPECT_TRUE(op->prepare.scalar) << op->name << " has no scalar prepare";
            }
        }
    }
    std::vector<std::string> want = {"scalar"};
    if (ops::cpu_features().avx2) want.push_back("avx2");
    if (ops::cpu_features().avx512) want.push_back("avx512");
    EXPECT_EQ(walked, want);
    std::printf("[ walk     ] kernel paths on this CPU:");
    for (const std::string& p : walked) std::printf(" %s", p.c_str());
    std::printf("\n");
}

// The comparison the walk makes can fail: one element off by one ulp and an element left unwritten (NaN,
// as outputs start) are each reported.
TEST(OpTableWalk, ComparisonCatchesAWrongOrMissingElement) {
    const ops::OpDef& mul = *ops::find_op("mul");
    OpCase ref = find_op_coverage("mul")->test_shapes().front().make();
    mul.reference(ref.args(mul));
    TestTensor got = ref.call.out;
    EXPECT_EQ(compare_to_reference(got, ref.call.out, 0), "");
    float* y = reinterpret_cast<float*>(got.bytes.data());
    y[0] = std::nextafter(y[0], 1e9f);
    EXPECT_NE(compare_to_reference(got, ref.call.out, 0), "");
    EXPECT_EQ(compare_to_reference(got, ref.call.out, 1e-3), "");
    y[0] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_NE(compare_to_reference(got, ref.call.out, 1e-3), "");
    EXPECT_NE(compare_to_reference(got, ref.call.out, 0), "");
}

class Row : public ::testing::TestWithParam<std::string> {};

TEST_P(Row, KernelEqualsReferenceOnEveryPath) {
    const std::string& name = GetParam();
    const ops::OpDef& op = *ops::find_op(name);
    const OpCoverage* coverage = find_op_coverage(name);
    ASSERT_NE(op.reference, nullptr) << "op-table row '" << name << "' has no reference";
    ASSERT_TRUE(coverage && coverage->test_shapes) << "op-table row '" << name << "' has no shape generator";
    const std::vector<OpShape> shapes = coverage->test_shapes();
    ASSERT_FALSE(shapes.empty()) << "op-table row '" << name << "' has no test shapes";
    for (const OpShape& shape : shapes) {
        SCOPED_TRACE(name + " " + shape.label);
        const OpCase base = shape.make();
        const ops::TensorDesc inferred = op.infer(base.call.node(op.op_name()));
        EXPECT_EQ(inferred.shape, base.call.out.shape);
        EXPECT_EQ(inferred.dtype, base.call.out.dtype);
        OpCase ref = base;
        op.reference(ref.args(op));
        for (const KernelPath& path : kernel_paths_on_this_cpu()) {
            std::string where = std::string(path.name) +
                                (op.run.plain() ? ""
                                                : std::string(" (runs ") +
                                                      ops::simd_level_name(op.run.level_of(path.level)) + ")");
            std::vector<ops::TensorDesc> descs;
            for (const TestTensor& t : base.call.in) descs.push_back(t.desc());
            if (const char* variant = op.path_variant ? op.path_variant(descs, path.level) : nullptr)
                where += std::string(" +") + variant;
            OpCase whole = base;
            for (Split split : {Split::Whole, Split::OddCuts, Split::EachUnit}) {
                OpCase c = base;
                run_case(op, path.level, c.args(op), split);
                EXPECT_EQ(compare_to_reference(c.written(op), ref.written(op), coverage->max_nmse), "")
                    << where << ", " << split_name(split);
                if (split == Split::Whole) {
                    whole = c;
                    continue;
                }
                EXPECT_TRUE(same_bits(c.written(op).bytes, whole.written(op).bytes))
                    << where << ", " << split_name(split) << ": not the one-range run's bits";
            }
            if (op.in_place && !op.writes_state) {
                OpCase c = base;
                KernelArgs args = c.args(op);
                args.out.data = args.in[0].data;
                run_case(op, path.level, args, Split::OddCuts);
                EXPECT_TRUE(same_bits(c.call.in[0].bytes, whole.call.out.bytes))
                    << where << ", in place: not the one-range run's bits";
            }
        }
    }
}

TEST_P(Row, InferRefusesANodeWithoutInputsNamingTheOp) {
    const ops::OpDef& op = *ops::find_op(GetParam());
    OpCall none;
    none.params = op.defaults;
    const std::string message = infer_error(op, none.node(op.op_name()));
    EXPECT_EQ(message.rfind("[" + std::string(op.op_name()) + "] node 'test.", 0), 0u) << message;
}

INSTANTIATE_TEST_SUITE_P(OpTableWalk, Row, ::testing::ValuesIn(row_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace graphrun::testing
