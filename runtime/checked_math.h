// runtime/checked_math.h — size arithmetic on numbers that come from outside (files, options).
//
// A tensor's bytes, a plan's arena, a KV cache: each is a product or a sum of numbers a model
// file, a graph file or a command line chose. Plain int64 arithmetic wraps (or is undefined) on
// overflow, and a wrapped size allocates a small buffer that a kernel then writes past. Every such
// size is computed here instead; a result that does not fit, or a negative operand, throws
// SizeError whose text says what was being computed:
//   checked_mul(n_layer, n_ctx, "KV cache positions")  ->  "KV cache positions: 5 x 2^62 overflows int64"
// `what` is text, or a callable returning text, called only on failure (so hot paths build no strings).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace graphrun {

class SizeError : public std::overflow_error {
public:
    using std::overflow_error::overflow_error;
};

namespace checked_detail {
template <class What>
[[noreturn]] void fail(const What& what, int64_t a, const char* op, int64_t b, const char* why) {
    std::string text;
    if constexpr (std::is_invocable_v<const What&>)
        text = what();
    else
        text = what;
    throw SizeError(text + ": " + std::to_string(a) + " " + op + " " + std::to_string(b) + " " + why);
}
}  // namespace checked_detail

// a * b for sizes: both must be >= 0 and the product must fit in int64.
template <class What>
int64_t checked_mul(int64_t a, int64_t b, const What& what) {
    if (a < 0 || b < 0) checked_detail::fail(what, a, "x", b, "has a negative operand");
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) checked_detail::fail(what, a, "x", b, "overflows int64");
    return r;
}

// a + b for sizes: both must be >= 0 and the sum must fit in int64.
template <class What>
int64_t checked_add(int64_t a, int64_t b, const What& what) {
    if (a < 0 || b < 0) checked_detail::fail(what, a, "+", b, "has a negative operand");
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r)) checked_detail::fail(what, a, "+", b, "overflows int64");
    return r;
}

// The product of every factor (1 for none), each step checked.
template <class What>
int64_t checked_product(std::initializer_list<int64_t> factors, const What& what) {
    int64_t r = 1;
    for (int64_t f : factors) r = checked_mul(r, f, what);
    return r;
}

// n rounded up to a multiple of alignment (> 0).
template <class What>
int64_t checked_align_up(int64_t n, int64_t alignment, const What& what) {
    if (alignment <= 0) checked_detail::fail(what, n, "aligned to", alignment, "needs a positive alignment");
    const int64_t padded = checked_add(n, alignment - 1, what);
    return padded / alignment * alignment;
}

// ceil(a / b) for a >= 0, b > 0 (block counts, chunk counts); a + b - 1 must fit in int64.
constexpr int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

}  // namespace graphrun
