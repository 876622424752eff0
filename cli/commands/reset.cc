// hourglass reset EVENT FEATURE [--at TIME]
#include <fmt/format.h>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct ResetArgs {
  std::string policy;  // --policy: warn when the event is not in it
  std::string event, feature, at;
};

int RunReset(const Globals& g, const ResetArgs& a) {
  const Resolved resolved = PolicyIn(a.policy, a.event, a.feature);
  const std::string& feature = resolved.feature;
  SystemClock clock;
  Runtime rt(g, clock, EngineUse::kOneShot);
  const std::optional<Instant> at = ParseAt(a.at);
  const Engine::ResetOutcome reset =
      Unwrap(rt.engine().Reset(a.event, feature, at, resolved.policy.block_for));
  const Instant around = at.value_or(clock.Now());
  if (g.json) {
    Print(Dump({{"event", a.event},
                {"feature", feature},
                {"around", ToUnix(around)},
                {"deleted", reset.deleted},
                {"keys_read", reset.cost.keys_read},
                {"round_trips", reset.cost.round_trips}}) +
          "\n");
  } else {
    Print(fmt::format("reset {} {}: deleted {} bucket{} around {}\n", DisplayText(a.event),
                      DisplayText(feature), reset.deleted, reset.deleted == 1 ? "" : "s",
                      FormatTime(around)));
  }
  return kOk;
}

}  // namespace

Command AddResetCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<ResetArgs>();
  CLI::App* sub =
      app.add_subcommand("reset", "Delete every bucket of an event+feature: all windows read 0");
  AddFeatureArgs(sub, args->event, args->feature);
  AddPolicyCheckOption(sub, args->policy);
  sub->add_option("--at", args->at,
                  "reset the buckets alive around TIME (Unix seconds or ISO 8601; replayed hits)");
  sub->footer(
      "Examples:\n"
      "  hourglass reset signup ann@example.com\n"
      "  hourglass reset request 66.249.73.135 --at 1431907000\n"
      "  hourglass reset login ann@example.com --policy policy.yaml   # lifts its penalty too");
  return {sub, [&g, args] { return RunReset(g, *args); }};
}

}  // namespace hourglass::cli
