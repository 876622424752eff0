// How long the property tests' random traces run: whole, or a quarter as long when the
// environment sets HOURGLASS_TEST_TRACES=short. The sanitizer stage sets it: there a trace looks
// for memory errors, which its first quarter runs through as well, while the plain suite (and
// ThreadSanitizer's, for the concurrent traces) proves exactness on whole traces. A threshold
// that shows a trace exercised something (so many denials, so many live queries) scales with it.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace hourglass::testing {

// 1 for whole traces (HOURGLASS_TEST_TRACES unset, empty or "full"), 4 for short ones ("short"),
// read once per test program (loops call this in their conditions). Any other value stops the
// test program: a misspelt setting must not pass unnoticed.
inline int TraceDivisor() {
  static const int divisor = [] {
    const char* value = std::getenv("HOURGLASS_TEST_TRACES");
    const std::string_view traces = value == nullptr ? "" : value;
    if (traces.empty() || traces == "full") return 1;
    if (traces == "short") return 4;
    std::fprintf(stderr, "HOURGLASS_TEST_TRACES=%s: expected full or short\n", value);
    std::abort();
  }();
  return divisor;
}

// `full` steps (checks, queries, hits) of a trace, or a quarter of them, at least one.
inline int TraceSteps(int full) { return std::max(1, full / TraceDivisor()); }

}  // namespace hourglass::testing
