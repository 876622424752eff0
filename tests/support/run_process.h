// Runs a program and captures its exit code, stdout and stderr (for CLI tests).
#pragma once

#include <sys/types.h>

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

// SIGSTOP to `pid`, then waits (up to a second) until every thread of it has stopped: kill()
// returns before they do. True once they all have: connections stay open and nothing answers.
bool Freeze(pid_t pid);

// fork() for a child that will exec a server: the child gets SIGKILL when the thread that forked
// it ends, so a test that aborts (a sanitizer finding, a crash) leaves no server behind holding
// its output open. Returns as fork() does.
pid_t ForkTiedToTest();

}  // namespace hourglass::testing
