// hourglass hit EVENT FEATURE [--cost N] [--at TIME]
#include <fmt/format.h>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct HitArgs {
  std::string policy;  // --policy: warn when the event is not in it
  std::string event, feature, at;
  int64_t cost = 1;
};

int RunHit(const Globals& g, const HitArgs& a) {
  const std::string feature = FeatureIn(a.policy, a.event, a.feature);
  SystemClock clock;
  Runtime rt(g, clock, EngineUse::kOneShot);
  const Instant t = ParseAt(a.at).value_or(clock.Now());
  const Cost cost = Unwrap(rt.engine().Record(a.event, feature, CheckCost(a.cost), t));
  if (g.json) {
    Print(Dump({{"event", a.event},
                {"feature", feature},
                {"at", ToUnix(t)},
                {"cost", a.cost},
                {"keys_written", cost.keys_written},
                {"keys_read", cost.keys_read},
                {"round_trips", cost.round_trips}}) +
          "\n");
  } else {
    Print(fmt::format("recorded {} hit{} of {} {} at {}\n", a.cost, a.cost == 1 ? "" : "s",
                      DisplayText(a.event), DisplayText(feature), FormatTime(t)));
  }
  return kOk;
}

}  // namespace

Command AddHitCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<HitArgs>();
  CLI::App* sub = app.add_subcommand("hit", "Record a hit");
  AddFeatureArgs(sub, args->event, args->feature);
  AddPolicyCheckOption(sub, args->policy);
  AddCostOption(sub, args->cost);
  sub->add_option("--at", args->at,
                  "record at TIME (Unix seconds or ISO 8601, 2015-05-17T10:05:03Z) instead of now");
  sub->footer(
      "Examples:\n"
      "  hourglass hit signup ann@example.com\n"
      "  hourglass hit url_shorten 203.0.113.7 --cost 3 --at 1431857103");
  return {sub, [&g, args] { return RunHit(g, *args); }};
}

}  // namespace hourglass::cli
