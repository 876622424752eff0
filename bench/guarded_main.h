// A benchmark binary's main: parses the command line with CLI11 (`--help` lists the options),
// runs `body`, and turns a parse error or an escaped exception into a message on stderr and exit
// code 2 (benchmarks treat their own setup failures as usage errors).
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>

namespace hourglass::bench {

template <typename Body>
int GuardedMain(CLI::App& app, int argc, char** argv, Body body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}\nRun with --help for the options.\n", app.get_name(), e.what());
    return 2;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", app.get_name(), e.what());
    return 2;
  }
}

}  // namespace hourglass::bench
