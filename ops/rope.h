// ops/rope.h — rope's attributes (the kernel is in ops/rope.cpp).
#pragma once

namespace graphrun::ops {

// Which elements of a head turn together (ggml's rope modes).
enum RopeMode : int {
    kRopeNormal = 0,  // consecutive pairs (x[2i], x[2i+1]): GGML_ROPE_TYPE_NORMAL, Llama
    kRopeNeox = 1,    // pairs (x[i], x[i + head_dim/2]): GGML_ROPE_TYPE_NEOX, Qwen2/Qwen3 (GPT-NeoX)
};

struct RopeParams {
    int n_head = 0;         // heads in each row of x
    int head_dim = 0;       // elements per head; even
    float base = 10000.0f;  // theta_i = pos * base^(-2i/head_dim); ggml's default
    int mode = kRopeNormal;
};

}  // namespace graphrun::ops
