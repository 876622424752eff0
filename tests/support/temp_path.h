// A path in the tests' temporary directory that no other test process uses at the same time:
// ctest runs test cases side by side (each its own process), and two suites may run at once, so
// a fixed name would be written by one test while another reads it.
//
//   const std::string policy = testing::UniqueTempPath("policy.yaml");
//
// Thread-safety: a pure function.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace hourglass::testing {

// "<TempDir>/hourglass-<pid>-<name>".
inline std::string UniqueTempPath(std::string_view name) {
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  return dir + "hourglass-" + std::to_string(getpid()) + "-" + std::string(name);
}

}  // namespace hourglass::testing
