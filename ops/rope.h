// ops/rope.h — rope's attributes (the kernel is in ops/rope.cpp).
#pragma once

namespace graphrun::ops {

struct RopeParams {
    int n_head = 0;         // heads in each row of x
    int head_dim = 0;       // elements per head; even
    float base = 10000.0f;  // theta_i = pos * base^(-2i/head_dim); ggml's default
};

}  // namespace graphrun::ops
