// hourglass check EVENT FEATURE [--limit N/DUR]... [--policy FILE] [--mode M] [--cost N] [--at T]
#include <fmt/format.h>

#include <cstdio>

#include "../commands.h"
#include "../policy_args.h"
#include "../render.h"
#include "../runtime.h"
#include "../until.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"
#include "hourglass/policy_file.h"

namespace hourglass::cli {
namespace {

struct CheckArgs {
  PolicyArgs policy;
  std::string event, feature, at;
  int64_t cost = 1;
  bool peek = false;  // --peek: decide without recording (Engine::Peek)
};

std::string DecisionText(std::string_view event, std::string_view feature, const Decision& d) {
  std::string out = fmt::format("{} {} {}", d.allowed ? "allowed" : "denied", DisplayText(event),
                                DisplayText(feature));
  if (d.degraded) {
    out += fmt::format(" (degraded: {})", d.store_error->ToString());
  } else if (!d.allowed) {
    out += d.retry_after ? fmt::format(" (retry after {}s)", d.retry_after->count())
                         : std::string(" (never: the cost exceeds a limit)");
  }
  out += "\n";
  if (d.blocked_until) out += BlockedText(d.blocked_until);
  for (const LimitOutcome& o : d.limits) {
    // Counts settled by bounds are shown as the range the true count lies in.
    const std::string count =
        o.exact ? fmt::format("{}", o.count) : fmt::format("{}..{}", o.count_min, o.count);
    out += fmt::format("  {:<16} count {:>9}  remaining {:>6}{}\n", DescribeLimits({o.limit}),
                       count, o.remaining, o.exceeded ? "  exceeded" : "");
  }
  return out;
}

int RunCheck(const Globals& g, const CheckArgs& a) {
  const PolicySource source = OpenPolicySource(a.policy);
  if (source.empty()) {
    Fail(kUsage, "no limits: give --limit N/DUR (e.g. --limit 5/m) or --policy FILE");
  }
  const Resolved resolved = Unwrap(source.Resolve(a.event, a.feature));
  const Policy& policy = resolved.policy;
  SystemClock clock;
  Runtime rt(g, clock, EngineUse::kOneShotExact);
  rt.ReadLossNotes();
  const Engine& engine = rt.engine();
  const Decision d = Unwrap(
      a.peek ? engine.Peek(a.event, resolved.feature, policy, CheckCost(a.cost), ParseAt(a.at))
             : engine.Check(a.event, resolved.feature, policy, CheckCost(a.cost), ParseAt(a.at)));
  if (g.json) {
    nlohmann::json j = DecisionJson(d);
    if (a.peek) {
      const nlohmann::json until = UntilJson(d);
      j["binding"] = until["binding"];
      j["free_at"] = until["free_at"];
    }
    Print(Dump(j) + "\n");
  } else {
    Print(a.peek ? fmt::format("{} {} (a peek: nothing recorded)\n{}", DisplayText(a.event),
                               DisplayText(resolved.feature), UntilText(d))
                 : DecisionText(a.event, resolved.feature, d));
  }
  if (d.degraded && d.store_error->code() == ErrorCode::kDataLoss) {
    std::fprintf(stderr, "hourglass: warning: %s\n", d.store_error->message().c_str());
  } else if (d.degraded) {
    // A CLI call holds no local hits to write back: local fails closed here.
    const std::string mode = policy.on_store_failure == FailureMode::kLocal
                                 ? "closed: local is for services"
                                 : std::string(FailureModeName(policy.on_store_failure));
    std::fprintf(stderr, "hourglass: store failed (%s), decision per policy (fail %s): %s\n",
                 std::string(ErrorCodeName(d.store_error->code())).c_str(), mode.c_str(),
                 d.store_error->message().c_str());
    return kUnavailable;
  }
  return d.allowed ? kOk : kDenied;
}

}  // namespace

Command AddCheckCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* sub =
      app.add_subcommand("check", "Check a hit against limits and record it per the mode");
  AddFeatureArgs(sub, args->event, args->feature);
  AddPolicyArgs(sub, args->policy);
  AddCostOption(sub, args->cost);
  sub->add_flag("--peek", args->peek,
                "decide without recording anything: what a hit would get, each limit's count, "
                "the limit that binds and when the client is free again");
  sub->add_option("--at", args->at,
                  "check at TIME (Unix seconds or ISO 8601, 2015-05-17T10:05:03Z) instead of now");
  sub->footer(
      "Exit code 0 allowed, 1 denied, 3 store unreachable (decision per the policy's failure "
      "mode).\n"
      "Examples:\n"
      "  hourglass check url_shorten 203.0.113.7 --limit 2/s --limit 5/m --limit 10/h --limit "
      "100/d\n"
      "  hourglass check signup ann@example.com --policy policies/example.yaml --json\n"
      "  hourglass check login mallory --limit 5/10m --mode attempts\n"
      "  hourglass check signup ann@example.com --policy /etc/hourglass/policy.yaml --peek");
  return {sub, [&g, args] { return RunCheck(g, *args); }};
}

}  // namespace hourglass::cli
