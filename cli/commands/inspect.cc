// hourglass inspect EVENT FEATURE [--at TIME]: one timeline per ladder level, then the
// default windows (1s 1m 1h 1d within the retention).
#include <fmt/format.h>

#include <algorithm>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "../until.h"
#include "hourglass/display_text.h"
#include "hourglass/inspection.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct InspectArgs {
  std::string policy;  // --policy: warn when the event is not in it; its limits: until when
  std::string event, feature, at;
};

std::string TimelineText(const Timeline& t, int64_t now) {
  const bool seconds = t.width < 60;
  const auto clock = [&](int64_t s) { return FormatTimeOfDay(FromUnix(s), seconds); };
  const int64_t first = t.buckets.front().index * t.width;
  const uint64_t max = *std::max_element(t.values.begin(), t.values.end());
  const UnitNames names = NamesOf(t.width);
  return fmt::format("{:<12}{}..{}  (max {}{})\n  {}\n", "per " + names.unit + ",", clock(first),
                     clock(now), max, names.per, Sparkline(t.values));
}

// Where denied attempts are, since these buckets hold only what was counted; `mode` is the
// event's, when the policy file gave it.
std::string DeniedNote(const std::string& event, std::optional<CountingMode> mode) {
  if (mode == CountingMode::kAttempts) {
    return "these are the hits counted: the event is in attempts mode, so every attempt is "
           "among them, the denied ones too\n";
  }
  return fmt::format(
      "these are the hits counted: in admitted mode{} a denied attempt is not among them; "
      "`hourglass top --service URL --event {}` shows who the services denied in the last 15 "
      "minutes, and `mode: attempts` counts every attempt\n",
      mode ? "" : " (the default)", event);
}

int RunInspect(const Globals& g, const InspectArgs& a) {
  const Resolved resolved = PolicyIn(a.policy, a.event, a.feature);
  const std::string& feature = resolved.feature;
  SystemClock clock;
  Runtime rt(g, clock, ReadingUse(resolved));
  rt.ReadLossNotes();
  const Instant t = ParseAt(a.at).value_or(clock.Now());
  const Inspection inspection =
      Unwrap(Inspect(rt.engine(), a.event, feature, t, resolved.policy.block_for));
  const std::optional<Decision> peek = PeekUnder(rt.engine(), a.event, resolved, t);
  if (g.json) {
    nlohmann::json j = InspectionJson(a.event, feature, inspection);
    if (peek) j["until"] = UntilJson(*peek);
    Print(Dump(j) + "\n");
    return kOk;
  }
  std::string out =
      fmt::format("{} {} at {}\n\n", DisplayText(a.event), DisplayText(feature), FormatTime(t));
  for (const Timeline& timeline : inspection.timelines) out += TimelineText(timeline, ToUnix(t));
  out += fmt::format("\nwindows ending {}:\n", a.at.empty() ? "now" : "at " + FormatTime(t)) +
         CountsText(inspection.counts) + BlockedText(inspection.blocked_until);
  if (peek) out += "\n" + UntilText(*peek);
  out +=
      fmt::format("keys read {}, round trips {}\n", inspection.keys_read, inspection.round_trips);
  out += DeniedNote(DisplayText(a.event), resolved.policy.limits.empty()
                                              ? std::nullopt
                                              : std::optional(resolved.policy.mode));
  Print(out);
  return kOk;
}

}  // namespace

Command AddInspectCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub =
      app.add_subcommand("inspect", "Show a feature's buckets as timelines, and its windows");
  AddFeatureArgs(sub, args->event, args->feature);
  AddPolicyCheckOption(sub, args->policy);
  sub->add_option(
      "--at", args->at,
      "inspect at TIME (Unix seconds or ISO 8601, 2015-05-17T10:05:03Z) instead of now");
  sub->footer(
      "With --policy (or HOURGLASS_POLICY), also what a hit now would get: each limit's count of "
      "its maximum, the limit that binds and when the client is free again.\n"
      "Examples:\n"
      "  hourglass inspect url_shorten 203.0.113.7\n"
      "  hourglass inspect signup ann@example.com --policy /etc/hourglass/policy.yaml\n"
      "  hourglass inspect request 66.249.73.135 --at 1431907000 --json");
  return {sub, [&g, args] { return RunInspect(g, *args); }};
}

}  // namespace hourglass::cli
