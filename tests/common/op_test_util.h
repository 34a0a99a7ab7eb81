// tests/common/op_test_util.h — the GoogleTest side of op tests: a kernel held against its reference (one
// range, odd ranges, in place). The buffers, split runs and NMSE are harness/op_call.h's, shared with the
// op-table walk and the benchmarks.
// Generic over ops: nothing here knows a particular op.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/op_call.h"

namespace graphrun::testing {

enum class InPlace { IfTheOpAllows, Required };

// Kernel (one range; three odd ranges; in place) against the op's reference, plus infer's output
// description. Every run's NMSE must be below max_nmse; max_nmse 0 asks for identical output.
// InPlace::Required also fails when the op's row does not allow in-place.
inline void expect_kernel_matches_reference(const char* name, const OpCall& call, double max_nmse,
                                            InPlace in_place = InPlace::IfTheOpAllows) {
    const ops::OpDef& op = op_row(name);
    const ops::TensorDesc inferred = op.infer(call.node(name));
    EXPECT_EQ(inferred.shape, call.out.shape) << name;
    EXPECT_EQ(inferred.dtype, call.out.dtype) << name;

    auto expect_close = [&](const std::vector<float>& got, const std::vector<float>& want, const char* how) {
        const double err = nmse(got, want);
        EXPECT_TRUE(max_nmse == 0 ? err == 0 : err < max_nmse)
            << name << how << ": NMSE " << err << ", bound " << max_nmse;
    };
    OpCall ref = call;
    op.reference(ref.args());
    const std::vector<float> want = ref.out.floats();
    for (bool split : {false, true}) {
        OpCall c = call;
        run_op(op, c.args(), split);
        expect_close(c.out.floats(), want, split ? " split ranges" : " one range");
    }
    if (in_place == InPlace::Required) {
        ASSERT_TRUE(op.in_place) << name << " does not allow in place";
    }
    if (op.in_place) {
        OpCall c = call;
        run_op(op, c.args_in_place(), true);
        expect_close(c.in[0].floats(), want, " in place");
    }
}

}  // namespace graphrun::testing
