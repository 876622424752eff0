// hourglass policy validate FILE
#include <fmt/format.h>

#include <cstdio>

#include "../commands.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"
#include "hourglass/policy_file.h"

namespace hourglass::cli {
namespace {

nlohmann::json EventsJson(const PolicyFile& policies) {
  nlohmann::json events = nlohmann::json::object();
  for (const auto& [event, entry] : policies.events()) {
    nlohmann::json overrides = nlohmann::json::object();
    for (const auto& [feature, policy] : entry.overrides) {
      overrides[feature] = DescribeLimits(policy.limits);
    }
    events[event] = {{"limits", DescribeLimits(entry.policy.limits)},
                     {"mode", CountingModeName(entry.policy.mode)},
                     {"on_store_failure", FailureModeName(entry.policy.on_store_failure)},
                     {"overrides", overrides}};
    if (entry.policy.local_share) {
      events[event]["local_share"] = entry.policy.local_share->ToString();
    }
  }
  return events;
}

int RunPolicyValidate(const Globals& g, const std::string& file) {
  const PolicyFile policies = Unwrap(PolicyFile::Load(file));
  if (Status s = policies.CheckWindows(RetentionOf(g)); !s.ok()) Fail(kUsage, s.error().message());
  const std::vector<std::string> remarks = policies.Remarks();
  if (g.json) {
    Print(Dump({{"valid", true},
                {"file", file},
                {"events", EventsJson(policies)},
                {"remarks", remarks}}) +
          "\n");
  } else {
    std::string notes;
    for (const std::string& r : remarks) notes += "note: " + DisplayText(r) + "\n";
    Print(fmt::format("{}: valid\n{}{}", DisplayText(file), policies.Explain(), notes));
  }
  return kOk;
}

}  // namespace

void AddPolicyCheckOption(CLI::App* sub, std::string& path) {
  sub->add_option("--policy", path,
                  "policy file the event should be in: warns if it is not (a typo); with its "
                  "limits and penalty (block_for), count and inspect show until when a client is "
                  "limited and reset lifts a penalty (env HOURGLASS_POLICY)")
      ->envname("HOURGLASS_POLICY");
}

Resolved PolicyIn(const std::string& path, const std::string& event, const std::string& feature) {
  if (path.empty()) return Resolved{{}, feature};
  const PolicyFile policies = Unwrap(PolicyFile::Load(path));
  Result<Resolved> resolved = policies.Resolve(event, feature);
  if (resolved.ok()) return std::move(*resolved);
  if (resolved.error().code() != ErrorCode::kNotFound) Fail(kUsage, resolved.error().message());
  std::fprintf(stderr, "hourglass: warning: %s\n", resolved.error().message().c_str());
  return Resolved{{}, feature};
}

EngineUse ReadingUse(const Resolved& resolved) {
  return resolved.policy.limits.empty() ? EngineUse::kOneShot : EngineUse::kOneShotExact;
}

std::optional<Decision> PeekUnder(const Engine& engine, const std::string& event,
                                  const Resolved& resolved, Instant at) {
  if (resolved.policy.limits.empty()) return std::nullopt;
  return Unwrap(engine.Peek(event, resolved.feature, resolved.policy, 1, at));
}

std::string FeatureIn(const std::string& path, const std::string& event,
                      const std::string& feature) {
  return PolicyIn(path, event, feature).feature;
}

Command AddPolicyCommand(CLI::App& app, const Globals& g) {
  auto path = std::make_shared<std::string>();
  CLI::App* policy = app.add_subcommand("policy", "Work with policy files");
  policy->require_subcommand(1);
  CLI::App* validate = policy->add_subcommand("validate", "Parse and explain a policy file");
  validate->add_option("file", *path, "YAML policy file")->required();
  validate->footer(
      "Exit code 0 valid, 2 invalid (the error names the line).\n"
      "Examples:\n"
      "  hourglass policy validate policies/example.yaml");
  return {validate, [&g, path] { return RunPolicyValidate(g, *path); }};
}

}  // namespace hourglass::cli
