// fuzz/sampler_fuzz.cpp — sampler parameters and logits as a request could give them.
//
// Every SamplerParams field is taken from the input as raw bits (NaN, Inf, negative, huge), then
// the sampler is built (sampler_validate must refuse what it cannot honour, with
// std::invalid_argument) and asked for tokens from logits that may hold Inf and NaN. Checked: an
// accepted sampler returns ids inside the vocabulary, and sample() refuses only a NaN logit or a
// row with nothing above -inf.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "runtime/text/sampler.h"

using namespace graphrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    SamplerParams p;
    p.temperature = in.ConsumeFloatingPoint<float>();
    p.top_k = in.ConsumeIntegral<int32_t>();
    p.top_p = in.ConsumeFloatingPoint<float>();
    p.min_p = in.ConsumeFloatingPoint<float>();
    p.repeat_penalty = in.ConsumeFloatingPoint<float>();
    p.repeat_last_n = in.ConsumeIntegral<int32_t>();
    p.frequency_penalty = in.ConsumeFloatingPoint<float>();
    p.presence_penalty = in.ConsumeFloatingPoint<float>();
    p.seed = in.ConsumeBool() ? kSamplerRandomSeed : in.ConsumeIntegral<uint64_t>();
    const int32_t n_vocab = in.ConsumeIntegralInRange<int32_t>(-1, 600);
    try {
        Sampler sampler(p, n_vocab);
        std::vector<float> logits(static_cast<size_t>(n_vocab));
        for (int step = 0; step < 4 && in.remaining_bytes() > 0; ++step) {
            for (float& x : logits) x = in.ConsumeBool() ? in.ConsumeFloatingPoint<float>() : in.ConsumeFloatingPointInRange(-30.0f, 30.0f);
            bool has_nan = false;
            for (float x : logits) has_nan |= std::isnan(x);
            int32_t id = -1;
            try {
                id = sampler.sample(logits);
            } catch (const std::invalid_argument& e) {
                // The two documented refusals: a NaN logit, and nothing left above -inf.
                if (has_nan || std::string_view(e.what()).find("every candidate logit is -inf") != std::string_view::npos)
                    continue;
                fuzz::undocumented(e);
            }
            if (has_nan || id < 0 || id >= n_vocab) std::abort();
            sampler.accept(id);
        }
        sampler.reset();
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
        fuzz::undocumented(e);
    }
    return 0;
}
