// ops/attention_paths.cpp — attention's and kv_write's kernels per instruction set: one driver each,
// three sets of loops.
//
// The driver (attend_units) is llama.cpp's CPU flash-attention loop for (token, query head) pairs; the
// numerics are spelled out in ops/attention.cpp, whose attention_reference every path equals bit for
// bit. The driver is a template over a set of loops and is inlined (flatten) into each path's entry
// point, which carries that path's target attribute, so the loops inline into it too.
// Scores are computed for a run of kBlock positions before they are folded into the softmax one by
// one: the dot products of a run do not depend on each other, so they overlap in the pipeline. A run
// never crosses a KV block (kBlock divides kKvBlockSize), so its rows are contiguous in the cache.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/simd.h"
#include "runtime/fp16.h"

namespace graphrun::ops {

namespace {

constexpr int kBlock = 8;  // positions scored at once
static_assert(kKvBlockSize % kBlock == 0, "a run of scored positions must stay inside one KV block");
constexpr int kLanes = 64;  // ggml's f16 dot on AVX-512: 4 accumulators of 16 floats per 64 elements

// S * ms + vs with the product rounded before the add, as llama.cpp's compiled code does it. GCC's C++
// default (-ffp-contract=fast) would fuse the two into one FMA inside the FMA-enabled paths; the empty
// asm makes the product opaque, so it cannot.
inline float mul_then_add(float a, float b, float c) {
    float product = a * b;
    __asm__("" : "+x"(product));
    return product + c;
}

// ---- scalar: runtime/fp16.h conversions, std::fma -------------------------------------------------

struct ScalarLoops {
    static void to_f16(const float* x, uint16_t* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
    }
    static void round_q(const float* q, float* qf, int n) {
        for (int i = 0; i < n; ++i) qf[i] = fp16_to_f32(f32_to_fp16(q[i]));
    }
    static void dots(const float* qf, const uint16_t* k, int64_t stride, int nb, int hd, float* s) {
        const int n64 = hd / kLanes * kLanes;
        for (int j = 0; j < nb; ++j) {
            const uint16_t* kj = k + j * stride;
            float lane[kLanes] = {};
            for (int i = 0; i < n64; ++i) lane[i % kLanes] += qf[i] * fp16_to_f32(kj[i]);
            float r[16];
            for (int l = 0; l < 16; ++l) r[l] = (lane[l] + lane[32 + l]) + (lane[16 + l] + lane[48 + l]);
            for (int w = 8; w >= 1; w /= 2)
                for (int l = 0; l < w; ++l) r[l] += r[l + w];
            double sum = r[0];
            for (int i = n64; i < hd; ++i) sum += double(qf[i] * fp16_to_f32(kj[i]));
            s[j] = float(sum);
        }
    }
    static void scale(uint16_t* acc, float ms, int n) {
        for (int i = 0; i < n; ++i) acc[i] = f32_to_fp16(fp16_to_f32(acc[i]) * ms);
    }
    static void mad(uint16_t* acc, const uint16_t* v, float vs, int n) {
        for (int i = 0; i < n; ++i)
            acc[i] = f32_to_fp16(std::fma(fp16_to_f32(v[i]), vs, fp16_to_f32(acc[i])));
    }
    static void finish(const uint16_t* acc, float inv, float* out, int n) {
        for (int i = 0; i < n; ++i) out[i] = fp16_to_f32(acc[i]) * inv;
    }
};

// ---- AVX2 + FMA + F16C -------------------------------------------------------------------------------

#define GR_AVX2 __attribute__((target("avx2,fma,f16c")))

GR_AVX2 inline __m256 load_f16x8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
GR_AVX2 inline void store_f16x8(uint16_t* p, __m256 x) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}
GR_AVX2 inline float f16_one(uint16_t h) {
    return _cvtsh_ss(h);
}
GR_AVX2 inline uint16_t to_f16_one(float x) {
    return uint16_t(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

// Lanes l and l + 8 of a 16-float accumulator are lo[l] and hi[l]; this is _mm512_reduce_add_ps's
// order: 16 -> 8 (lo + hi), 8 -> 4, then (x0 + x2) + (x1 + x3).
GR_AVX2 inline float reduce16(__m256 lo, __m256 hi) {
    const __m256 y = _mm256_add_ps(lo, hi);
    const __m128 x = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
    const __m128 w = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(w, _mm_movehdup_ps(w)));
}

// The elements past the last multiple of 64: one double sum per position, element by element. The
// block's positions are interleaved so their dependency chains overlap.
GR_AVX2 inline void dot_tails(const float* qf, const uint16_t* k, int64_t stride, int nb, int n64, int hd,
                              double* sum) {
    const int n_tail = hd - n64;
    alignas(32) float kt[kBlock][kLanes];
    for (int j = 0; j < nb; ++j) {
        const uint16_t* kj = k + j * stride + n64;
        int i = 0;
        for (; i + 8 <= n_tail; i += 8) _mm256_store_ps(kt[j] + i, load_f16x8(kj + i));
        for (; i < n_tail; ++i) kt[j][i] = f16_one(kj[i]);
    }
    for (int i = 0; i < n_tail; ++i) {
        const float qi = qf[n64 + i];
        for (int j = 0; j < nb; ++j) sum[j] += double(qi * kt[j][i]);
    }
}

struct Avx2Loops {
    GR_AVX2 static void to_f16(const float* x, uint16_t* y, int64_t n) {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) store_f16x8(y + i, _mm256_loadu_ps(x + i));
        for (; i < n; ++i) y[i] = to_f16_one(x[i]);
    }
    GR_AVX2 static void round_q(const float* q, float* qf, int n) {
        int i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(
                qf + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(q + i), _MM_FROUND_TO_NEAREST_INT)));
        for (; i < n; ++i) qf[i] = f16_one(to_f16_one(q[i]));
    }
    // ggml's 16-float accumulator g is a[2g] (its lanes 0..7) and a[2g + 1] (lanes 8..15); products of two
    // halves are exact in float, so the FMA here rounds exactly as ggml's does.
    GR_AVX2 static void dots(const float* qf, const uint16_t* k, int64_t stride, int nb, int hd, float* s) {
        const int n64 = hd / kLanes * kLanes;
        double sum[kBlock];
        for (int j = 0; j < nb; ++j) {
            const uint16_t* kj = k + j * stride;
            __m256 a[8];
            for (__m256& x : a) x = _mm256_setzero_ps();
            for (int c = 0; c < n64; c += kLanes)
                for (int r = 0; r < 8; ++r)
                    a[r] = _mm256_fmadd_ps(load_f16x8(kj + c + 8 * r), _mm256_loadu_ps(qf + c + 8 * r), a[r]);
            // (g0 + g2) + (g1 + g3), lanes 0..7 and 8..15 separately
            const __m256 lo = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
            const __m256 hi = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
            sum[j] = double(reduce16(lo, hi));
        }
        if (n64 < hd) dot_tails(qf, k, stride, nb, n64, hd, sum);
        for (int j = 0; j < nb; ++j) s[j] = float(sum[j]);
    }
    GR_AVX2 static void scale(uint16_t* acc, float ms, int n) {
        const __m256 m = _mm256_set1_ps(ms);
        int i = 0;
        for (; i + 8 <= n; i += 8) store_f16x8(acc + i, _mm256_mul_ps(load_f16x8(acc + i), m));
        for (; i < n; ++i) acc[i] = to_f16_one(f16_one(acc[i]) * ms);
    }
    GR_AVX2 static void mad(uint16_t* acc, const uint16_t* v, float vs, int n) {
        const __m256 w = _mm256_set1_ps(vs);
        int i = 0;
        for (; i + 8 <= n; i += 8)
            store_f16x8(acc + i, _mm256_fmadd_ps(load_f16x8(v + i), w, load_f16x8(acc + i)));
        for (; i < n; ++i) acc[i] = to_f16_one(std::fma(f16_one(v[i]), vs, f16_one(acc[i])));
    }
    GR_AVX2 static void finish(const uint16_t* acc, float inv, float* out, int n) {
        const __m256 m = _mm256_set1_ps(inv);
        int i = 0;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(load_f16x8(acc + i), m));
        for (; i < n; ++i) out[i] = f16_one(acc[i]) * inv;
    }
};

// ---- AVX-512F: 16 at a time, the AVX2 loops for what is left ----------------------------------------

#define GR_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

GR_AVX512 inline __m512 load_f16x16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
GR_AVX512 inline void store_f16x16(uint16_t* p, __m512 x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

struct Avx512Loops {
    GR_AVX512 static void round_q(const float* q, float* qf, int n) {
        int i = 0;
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(
                qf + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(q + i), _MM_FROUND_TO_NEAREST_INT)));
        Avx2Loops::round_q(q + i, qf + i, n - i);
    }
    // Exactly ggml's loop: accumulator g takes elements 64c + 16g .. 64c + 16g + 15.
    GR_AVX512 static void dots(const float* qf, const uint16_t* k, int64_t stride, int nb, int hd, float* s) {
        const int n64 = hd / kLanes * kLanes;
        double sum[kBlock];
        for (int j = 0; j < nb; ++j) {
            const uint16_t* kj = k + j * stride;
            __m512 a[4];
            for (__m512& x : a) x = _mm512_setzero_ps();
            for (int c = 0; c < n64; c += kLanes)
                for (int g = 0; g < 4; ++g)
                    a[g] =
                        _mm512_fmadd_ps(load_f16x16(kj + c + 16 * g), _mm512_loadu_ps(qf + c + 16 * g), a[g]);
            const __m512 r = _mm512_add_ps(_mm512_add_ps(a[0], a[2]), _mm512_add_ps(a[1], a[3]));
            const __m256 lo = _mm512_castps512_ps256(r);
            const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r), 1));
            sum[j] = double(reduce16(lo, hi));
        }
        if (n64 < hd) dot_tails(qf, k, stride, nb, n64, hd, sum);
        for (int j = 0; j < nb; ++j) s[j] = float(sum[j]);
    }
    GR_AVX512 static void scale(uint16_t* acc, float ms, int n) {
        const __m512 m = _mm512_set1_ps(ms);
        int i = 0;
        for (; i + 16 <= n; i += 16) store_f16x16(acc + i, _mm512_mul_ps(load_f16x16(acc + i), m));
        Avx2Loops::scale(acc + i, ms, n - i);
    }
    GR_AVX512 static void mad(uint16_t* acc, const uint16_t* v, float vs, int n) {
        const __m512 w = _mm512_set1_ps(vs);
        int i = 0;
        for (; i + 16 <= n; i += 16)
            store_f16x16(acc + i, _mm512_fmadd_ps(load_f16x16(v + i), w, load_f16x16(acc + i)));
        Avx2Loops::mad(acc + i, v + i, vs, n - i);
    }
    GR_AVX512 static void finish(const uint16_t* acc, float inv, float* out, int n) {
        const __m512 m = _mm512_set1_ps(inv);
        int i = 0;
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, _mm512_mul_ps(load_f16x16(acc + i), m));
        Avx2Loops::finish(acc + i, inv, out + i, n - i);
    }
};

// ---- the driver ---------------------------------------------------------------------------------------

// kv_write: cache[slots[t]] = f16(x[t]) for tokens [begin, end).
template <class L>
inline void write_rows(const KernelArgs& args, int64_t begin, int64_t end) {
    const int64_t row = args.out.cols(), n_slots = args.out.rows();
    const int32_t* slots = args.in[2].as<int32_t>();
    uint16_t* cache = args.out.as<uint16_t>();
    assert(row == args.in[1].cols());
    for (int64_t t = begin; t < end; ++t) {
        const int64_t slot = slots[t];
        assert(0 <= slot && slot < n_slots);  // the session computes slots from block tables it checked
        (void)n_slots;
        L::to_f16(args.in[1].as<float>() + t * row, cache + slot * row, row);
    }
}

// run: units u = t * n_head + h in [begin, end).
template <class L>
inline void attend_units(const KernelArgs& args, int64_t begin, int64_t end) {
    const AttentionParams p = args.params.get<AttentionParams>();
    const int n_head = p.n_head, hd = p.head_dim;
    const int group = n_head / p.n_head_kv;
    const int64_t row = args.in[1].cols(), n_slots = args.in[1].rows(), table_width = args.in[4].cols();
    const float scale = 1.0f / std::sqrt(float(hd));
    const int32_t* positions = args.in[3].as<int32_t>();
    assert(0 < hd && hd <= kAttentionMaxHeadDim);
    float qf[kAttentionMaxHeadDim];      // q rounded to f16, held as floats
    uint16_t acc[kAttentionMaxHeadDim];  // sum_p exp(s_p - M) * v_p, f16 like ggml's VKQ16
    for (int64_t u = begin; u < end; ++u) {
        const int64_t t = u / n_head;
        const int h = int(u % n_head);
        const int64_t kv_offset = int64_t(h / group) * hd;
        const int64_t n_pos = int64_t(positions[t]) + 1;
        const int32_t* table = args.in[4].as<int32_t>() + t * table_width;
        assert(0 < n_pos && n_pos <= table_width * kKvBlockSize);
        L::round_q(args.in[0].as<float>() + (t * n_head + h) * hd, qf, hd);
        std::fill_n(acc, hd, uint16_t(0));
        float M = -std::numeric_limits<float>::infinity(), S = 0.0f;
        for (int64_t p0 = 0; p0 < n_pos; p0 += kBlock) {
            const int nb = int(std::min<int64_t>(kBlock, n_pos - p0));
            const int64_t slot = int64_t(table[p0 / kKvBlockSize]) * kKvBlockSize + p0 % kKvBlockSize;
            assert(0 <= slot && slot + nb <= n_slots);
            (void)n_slots;
            const uint16_t* k = args.in[1].as<uint16_t>() + slot * row + kv_offset;
            const uint16_t* v = args.in[2].as<uint16_t>() + slot * row + kv_offset;
            float s[kBlock];
            L::dots(qf, k, row, nb, hd, s);
            for (int j = 0; j < nb; ++j) {
                const float score = s[j] * scale;
                float ms = 1.0f, vs = 1.0f;
                if (score > M) {  // a new maximum: what the old terms are worth now
                    ms = std::exp(M - score);
                    M = score;
                    L::scale(acc, ms, hd);
                } else {
                    vs = std::exp(score - M);
                }
                L::mad(acc, v + j * row, vs, hd);
                S = mul_then_add(S, ms, vs);
            }
        }
        L::finish(acc, S == 0.0f ? 0.0f : 1.0f / S, args.out.as<float>() + (t * n_head + h) * hd, hd);
    }
}

void write_scalar(const KernelArgs& args, int64_t begin, int64_t end) {
    write_rows<ScalarLoops>(args, begin, end);
}
void run_scalar(const KernelArgs& args, int64_t begin, int64_t end) {
    attend_units<ScalarLoops>(args, begin, end);
}
GR_AVX2 __attribute__((flatten)) void write_avx2(const KernelArgs& args, int64_t begin, int64_t end) {
    write_rows<Avx2Loops>(args, begin, end);
}
GR_AVX2 __attribute__((flatten)) void run_avx2(const KernelArgs& args, int64_t begin, int64_t end) {
    attend_units<Avx2Loops>(args, begin, end);
}
GR_AVX512 __attribute__((flatten)) void run_avx512(const KernelArgs& args, int64_t begin, int64_t end) {
    attend_units<Avx512Loops>(args, begin, end);
}

}  // namespace

void kv_write_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end) {
    assert(simd_level_available(path));
    if (path == SimdLevel::Scalar) return write_scalar(args, begin, end);
    return write_avx2(args, begin, end);  // AVX-512 machines have AVX2; the conversion is the same
}

void attention_run_path(SimdLevel path, const KernelArgs& args, int64_t begin, int64_t end) {
    assert(simd_level_available(path));
    switch (path) {
        case SimdLevel::Avx512:
            return run_avx512(args, begin, end);
        case SimdLevel::Avx2:
            return run_avx2(args, begin, end);
        case SimdLevel::Scalar:
            return run_scalar(args, begin, end);
    }
}

}  // namespace graphrun::ops
