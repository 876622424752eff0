// Runs a program and captures its exit code, stdout and stderr (for CLI tests).
#pragma once

#include <string>
#include <vector>

namespace hourglass::testing {

struct ProcessResult {
  int code = -1;  // exit code, or 128 + signal
  std::string out;
  std::string err;
};

// Runs argv[0] with `argv`, with `env` ("NAME=value") added to the environment.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {});

}  // namespace hourglass::testing
