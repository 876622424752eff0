// hourglass count EVENT FEATURE [--window DUR]... [--at TIME]
#include <fmt/format.h>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "../until.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct CountArgs {
  std::string policy;  // --policy: warn when the event is not in it
  std::string event, feature, at;
  std::vector<std::string> windows;
};

int RunCount(const Globals& g, const CountArgs& a) {
  const Resolved resolved = PolicyIn(a.policy, a.event, a.feature);
  const std::string& feature = resolved.feature;
  SystemClock clock;
  Runtime rt(g, clock, ReadingUse(resolved));
  rt.ReadLossNotes();
  const std::vector<Window> windows =
      a.windows.empty() ? rt.engine().DefaultWindows() : ParseWindows(a.windows);
  const Counts counts = Unwrap(rt.engine().Count(a.event, feature, windows, ParseAt(a.at)));
  const Seconds block_for = resolved.policy.block_for;
  const std::optional<Instant> blocked =
      block_for > Seconds{0}
          ? Unwrap(rt.engine().BlockedUntil(a.event, feature, block_for, counts.at))
          : std::nullopt;
  const std::optional<Decision> peek = PeekUnder(rt.engine(), a.event, resolved, counts.at);
  if (g.json) {
    nlohmann::json j = CountsJson(a.event, feature, counts);
    if (block_for > Seconds{0}) {
      j["blocked_until"] = blocked ? nlohmann::json(ToUnix(*blocked)) : nlohmann::json(nullptr);
    }
    if (peek) j["until"] = UntilJson(*peek);
    Print(Dump(j) + "\n");
  } else {
    Print(fmt::format("{} {} at {}\n{}{}{}keys read {}, round trips {}\n", DisplayText(a.event),
                      DisplayText(feature), FormatTime(counts.at), CountsText(counts),
                      BlockedText(blocked), peek ? UntilText(*peek) : std::string(),
                      counts.cost.keys_read, counts.cost.round_trips));
  }
  return kOk;
}

}  // namespace

Command AddCountCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<CountArgs>();
  CLI::App* sub = app.add_subcommand("count", "Exact hits in sliding windows");
  AddFeatureArgs(sub, args->event, args->feature);
  AddPolicyCheckOption(sub, args->policy);
  sub->add_option("--window", args->windows,
                  "window length (s, m, h, d: 1d, 10m, 90s), repeatable; default 1s 1m 1h 1d "
                  "within --retention")
      ->expected(1)
      ->allow_extra_args(false)
      ->take_all();
  sub->add_option("--at", args->at,
                  "windows ending at TIME (Unix seconds or ISO 8601, 2015-05-17T10:05:03Z; default "
                  "now); exact in the past too");
  sub->footer(
      "With --policy (or HOURGLASS_POLICY), also what a hit now would get: each limit's count of "
      "its maximum, the limit that binds and when the client is free again.\n"
      "Examples:\n"
      "  hourglass count url_shorten 203.0.113.7\n"
      "  hourglass count signup ann@example.com --window 10m --window 1d --json\n"
      "  hourglass count request 66.249.73.135 --at 1431907000");
  return {sub, [&g, args] { return RunCount(g, *args); }};
}

}  // namespace hourglass::cli
