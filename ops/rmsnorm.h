// ops/rmsnorm.h — rmsnorm's attributes (the kernel is in ops/rmsnorm.cpp).
#pragma once

namespace graphrun::ops {

struct RmsnormParams {
    float eps = 0.0f;  // added to the mean square before the square root
    int group = 0;     // > 0: each run of this many elements of a row is normalised on its own (QK-norm)
};

}  // namespace graphrun::ops
