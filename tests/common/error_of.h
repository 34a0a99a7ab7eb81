// tests/common/error_of.h — the message a call throws, for tests that check how an error reads.
#pragma once

#include <exception>
#include <string>

namespace graphrun::testing {

// What f() throws (its what()), or "<no error>" when it returns.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace graphrun::testing
