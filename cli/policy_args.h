// The options that choose a check's policy (--limit, --policy, --mode), shared by check and
// replay, and their resolution into a PolicySource.
#pragma once

#include <string>
#include <vector>

#include "app.h"
#include "hourglass/policy_source.h"

namespace hourglass::cli {

struct PolicyArgs {
  std::vector<std::string> limits;
  std::string file;
  std::string mode;
};

void AddPolicyArgs(CLI::App* sub, PolicyArgs& args);
// Leaves with exit 2 for both --limit and --policy, a bad mode, limit or policy file.
PolicySource OpenPolicySource(const PolicyArgs& args);

}  // namespace hourglass::cli
