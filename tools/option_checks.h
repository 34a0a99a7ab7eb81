// tools/option_checks.h — range checks for numeric options, with messages that read well.
//
// CLI11's own (CLI::PositiveNumber, CLI::Range) say "Value 0 not in range 0.000000 to 1.79e308";
// these say what the option takes: "--batch: 0 is not allowed: give a whole number from 1 to 65536
// (the batch ceiling)". The check runs on the text before it is converted, so "abc" and "1e99" are
// named too instead of failing in the conversion.
#pragma once

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace graphrun::tools {

// A whole number in [lo, hi]; `what_hi` says why hi is the ceiling ("this machine's threads").
inline CLI::Validator whole_number_in(int64_t lo, int64_t hi, std::string what_hi = "") {
    const std::string range = "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                              (what_hi.empty() ? "" : " (" + what_hi + ")");
    return CLI::Validator(
        [lo, hi, range](std::string& text) -> std::string {
            errno = 0;
            char* end = nullptr;
            const long long v = std::strtoll(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || errno == ERANGE) return "'" + text + "' is not " + range;
            if (v < lo || v > hi) return text + " is out of range: give " + range;
            return "";
        },
        "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

}  // namespace graphrun::tools
