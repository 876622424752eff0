// The host's environment file (/etc/default/hourglass, the service unit's EnvironmentFile): the
// CLI reads the same settings as the service on its host, so `top`, `inspect`, `count` and
// `reset` there need no flags.
//
//   Result<EnvFile> file = ReadEnvFile("/etc/default/hourglass");
//   for (const auto& [name, value] : file->assignments) setenv(...);
//
// The syntax is the subset of systemd's EnvironmentFile (and of a shell's) that the package's file
// uses: NAME=VALUE lines, the value optionally in double or single quotes, blank lines and lines
// starting with '#' ignored, an optional leading "export ".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hourglass/status.h"

namespace hourglass::cli {

struct EnvFile {
  std::string path;
  std::vector<std::pair<std::string, std::string>> assignments;  // in the file's order
};

// Parses `text`, read from `path` (named in errors). kInvalidArgument names the line ("PATH:3:
// ...") of a line that is no assignment or whose quote does not close.
Result<EnvFile> ParseEnvFile(std::string_view text, std::string path);

// Reads and parses the file at `path`; kNotFound when it does not exist, kInvalidArgument when it
// cannot be read or parsed.
Result<EnvFile> ReadEnvFile(const std::string& path);

// The words of `args` as a shell splits a simple command line (whitespace between words, quotes
// grouping), for HOURGLASS_SERVE_ARGS. kInvalidArgument for a quote that does not close.
Result<std::vector<std::string>> SplitArgs(std::string_view args);

// Where the CLI reads the host's settings: `flag` (--env-file) when given, else the environment's
// HOURGLASS_ENV_FILE when set ("" turns the file off), else /etc/default/hourglass.
// `explicitly` tells whether the first two named it.
struct EnvFileChoice {
  std::string path;  // "" for none
  bool explicitly = false;
};
EnvFileChoice ChooseEnvFile(const std::string* flag, const char* environment);

inline constexpr std::string_view kDefaultEnvFile = "/etc/default/hourglass";

}  // namespace hourglass::cli
