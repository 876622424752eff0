// A benchmark binary's main: runs `body`, turning an escaped exception into a message on stderr
// and exit code 2 (benchmarks treat their own setup failures as usage errors).
#pragma once

#include <fmt/format.h>

#include <exception>

namespace hourglass::bench {

template <typename Body>
int GuardedMain(const char* name, Body body, int argc, char** argv) {
  try {
    return body(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 2;
  }
}

}  // namespace hourglass::bench
