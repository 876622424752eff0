#include "policy_args.h"

#include <fmt/format.h>

namespace hourglass::cli {

void AddPolicyArgs(CLI::App* sub, PolicyArgs& args) {
  // One value per --limit, so that "--" and a feature starting with '-' can follow.
  sub->add_option("--limit", args.limits, "N/DUR sliding limit, repeatable (e.g. 5/m)")
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  sub->add_option("--policy", args.file, "YAML policy file; uses the event's entry");
  sub->add_option("--mode", args.mode,
                  "admitted (denied hits do not count) or attempts; overrides the policy's");
}

PolicySource OpenPolicySource(const PolicyArgs& args) {
  if (!args.limits.empty() && !args.file.empty()) {
    Fail(kUsage, "give either --limit or --policy, not both");
  }
  std::optional<CountingMode> mode;
  if (!args.mode.empty()) {
    Result<CountingMode> parsed = ParseCountingMode(args.mode);
    if (!parsed.ok()) Fail(kUsage, fmt::format("--mode {}: use admitted or attempts", args.mode));
    mode = *parsed;
  }
  if (!args.file.empty()) return Unwrap(PolicySource::FromFile(args.file, mode));
  return Unwrap(PolicySource::FromLimits(args.limits, mode));
}

}  // namespace hourglass::cli
