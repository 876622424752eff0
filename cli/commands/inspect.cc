// hourglass inspect EVENT FEATURE [--at UNIX_SECONDS]: one timeline per ladder level, then the
// windows 1s 1m 1h 1d.
#include <fmt/format.h>

#include <algorithm>

#include "../commands.h"
#include "../render.h"
#include "../runtime.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

struct InspectArgs {
  std::string event, feature, at;
};

// The last buckets of one ladder level up to `now`: as many as make up one bucket of the next
// level (60 seconds, 60 minutes), or the retention for the top level (24 hours).
struct Timeline {
  size_t level = 0;
  int64_t width = 1;
  std::vector<Bucket> buckets;
  std::span<const uint64_t> values;
};

std::vector<Timeline> Timelines(const Engine& engine, int64_t now) {
  const Ladder& ladder = engine.options().ladder;
  std::vector<Timeline> timelines;
  for (size_t level = 0; level < ladder.levels(); ++level) {
    const int64_t w = ladder.width(level).count();
    const int64_t reach = level + 1 < ladder.levels() ? ladder.width(level + 1).count()
                                                      : engine.options().retention.count();
    Timeline timeline{level, w, {}, {}};
    for (int64_t i = std::max<int64_t>(1, reach / w) - 1; i >= 0; --i) {
      timeline.buckets.push_back(ladder.BucketAt(level, now - w * i));
    }
    timelines.push_back(std::move(timeline));
  }
  return timelines;
}

// How a level of `width` is named: "second" ("per second", JSON "seconds", "max 3/s"), or for
// a width without a name, its duration ("per 10s", JSON "per_10s", "max 3/10s").
struct UnitNames {
  std::string unit, json, per;
};

UnitNames NamesOf(int64_t width) {
  switch (width) {
    case 1:
      return {"second", "seconds", "/s"};
    case 60:
      return {"minute", "minutes", "/min"};
    case 3600:
      return {"hour", "hours", "/h"};
    case 86400:
      return {"day", "days", "/1d"};
    default: {
      const std::string d = FormatDuration(Seconds{width});
      return {d, "per_" + d, "/" + d};
    }
  }
}

std::string TimelineText(const Timeline& t, int64_t now) {
  const bool seconds = t.width < 60;
  const auto clock = [&](int64_t s) { return FormatTimeOfDay(FromUnix(s), seconds); };
  const int64_t first = t.buckets.front().index * t.width;
  const uint64_t max = *std::max_element(t.values.begin(), t.values.end());
  const UnitNames names = NamesOf(t.width);
  return fmt::format("{:<12}{}..{}  (max {}{})\n  {}\n", "per " + names.unit + ",", clock(first),
                     clock(now), max, names.per, Sparkline(t.values));
}

int RunInspect(const Globals& g, const InspectArgs& a) {
  SystemClock clock;
  Runtime rt(g, clock, EngineUse::kOneShot);
  const Engine& engine = rt.engine();
  const Instant t = ParseAt(a.at).value_or(clock.Now());
  std::vector<Timeline> timelines = Timelines(engine, ToUnix(t));
  std::vector<Bucket> buckets;
  for (const Timeline& timeline : timelines) {
    buckets.insert(buckets.end(), timeline.buckets.begin(), timeline.buckets.end());
  }
  const Engine::BucketValues read = Unwrap(engine.ReadBuckets(a.event, a.feature, buckets));
  size_t offset = 0;
  for (Timeline& timeline : timelines) {
    timeline.values =
        std::span<const uint64_t>(read.values).subspan(offset, timeline.buckets.size());
    offset += timeline.buckets.size();
  }
  const Counts counts =
      Unwrap(engine.Count(a.event, a.feature, ParseWindows({"1s", "1m", "1h", "1d"}), t));
  const uint64_t keys_read = read.cost.keys_read + counts.cost.keys_read;
  const uint64_t round_trips = read.cost.round_trips + counts.cost.round_trips;
  if (g.json) {
    nlohmann::json j = CountsJson(a.event, a.feature, counts);
    for (const Timeline& timeline : timelines) {
      j[NamesOf(timeline.width).json] =
          std::vector<uint64_t>(timeline.values.begin(), timeline.values.end());
    }
    j["keys_read"] = keys_read;
    j["round_trips"] = round_trips;
    Print(Dump(j) + "\n");
    return kOk;
  }
  std::string out = fmt::format("{} {} at {}\n\n", a.event, a.feature, FormatTime(t));
  for (const Timeline& timeline : timelines) out += TimelineText(timeline, ToUnix(t));
  out += fmt::format("\nwindows ending {}:\n", a.at.empty() ? "now" : "at " + FormatTime(t)) +
         CountsText(counts);
  out += fmt::format("keys read {}, round trips {}\n", keys_read, round_trips);
  Print(out);
  return kOk;
}

}  // namespace

Command AddInspectCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* sub =
      app.add_subcommand("inspect", "Show a feature's buckets as timelines, and its windows");
  AddFeatureArgs(sub, args->event, args->feature);
  sub->add_option("--at", args->at, "inspect at UNIX_SECONDS instead of now");
  sub->footer(
      "Examples:\n"
      "  hourglass inspect url_shorten 203.0.113.7\n"
      "  hourglass inspect request 66.249.73.135 --at 1431907000 --json");
  return {sub, [&g, args] { return RunInspect(g, *args); }};
}

}  // namespace hourglass::cli
