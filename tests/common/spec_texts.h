// tests/common/spec_texts.h — what the speculative-decoding tests (engine, server, cli) decode: the passage
// prompt lookup guesses well, and greedy sampling.
#pragma once

#include <string>

#include "runtime/text/sampler.h"

namespace graphrun::testing {

// A passage given twice and begun a third time: a model that continues it repeats the passage, which is
// what prompt lookup guesses.
inline const std::string kRepeated =
    "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n"
    "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n"
    "And God said, Let there be light: and there was light. And God saw";

inline const SamplerParams kGreedy{.temperature = 0.0f};

}  // namespace graphrun::testing
